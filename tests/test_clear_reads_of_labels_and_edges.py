"""Server-side reads of what the users did not send through a mechanism: the clean labels a
supervised ``NodeWise`` transformer is fitted on, and the true edges a graph step reads
before an edge mechanism collects them. The report must never say less than was spent."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.feature_selection import SelectKBest, SequentialFeatureSelector, f_classif
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skldp import GraphData, NodeWise
from skldp.accounting import privacy_report
from skldp.baselines import StructuralFeatures
from skldp.central import DegreeBoundedSampler
from skldp.mechanisms import EdgeRR, MultiBitMechanism
from skldp.population import BudgetExceededError
from skldp.propagation import FeatureSmoothing, GCNAggregation, KProp, PPRPropagation


@pytest.fixture
def sbm(binary_sbm):
    return binary_sbm(n=60, d=6)


def _mb():
    return MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)


def _label_reads(ledger):
    return [e for e in ledger.entries()
            if e.spec.model == "clear" and "labels" in e.spec.protects]


# ---------------------------------------------------------------- labels (NodeWise)

def test_a_supervised_transformer_is_charged_the_labels_it_reads(sbm):
    G, y = sbm
    pipe = Pipeline([("mb", _mb()), ("sel", NodeWise(SelectKBest(f_classif, k=2)))])
    pipe.fit(G[:40], y[:40])
    # the selection is a function of the clean labels: infinite epsilon, not 0
    reads = _label_reads(G.ledger)
    assert len(reads) == 1 and reads[0].n_users == 40
    report = privacy_report(pipe)
    assert report.epsilon_for("labels") == np.inf
    assert "labels in the clear" in str(report)
    assert pipe.named_steps["sel"].ledger_ is G.ledger
    # another view of the same users' graph (another fold) charges its own users too
    NodeWise(SelectKBest(f_classif, k=2)).fit(pipe[:1].transform(G[20:60]), y[20:60])
    assert _label_reads(G.ledger)[0].n_users == 60


def test_a_supervised_transformer_fitted_on_the_labels_the_users_sent_reads_nothing_more(sbm):
    # Before: charged as reading clean labels (inf), although its own message advised
    # fitting on a label mechanism's reports.
    from skldp.mechanisms import LabelRandomizedResponse
    G, y = sbm
    Z = _mb().fit_transform(G)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit()
    y_sent = rr.randomize(y[:40], G[:40])
    step = NodeWise(SelectKBest(f_classif, k=2)).fit(Z[:40], y_sent)
    assert _label_reads(G.ledger) == [] and step.ledger_ is G.ledger
    assert privacy_report(step).epsilon_for("labels") == 1.0
    NodeWise(SelectKBest(f_classif, k=2)).fit(Z[:40], np.asarray(y_sent))   # unmarked
    assert _label_reads(G.ledger)[0].n_users == 40


def test_a_transformer_whose_tags_require_labels_is_charged(sbm):
    G, y = sbm
    Z = _mb().fit_transform(G)
    NodeWise(LinearDiscriminantAnalysis(n_components=1)).fit(Z[:40], y[:40])
    assert privacy_report(G).epsilon_for("labels") == np.inf


def test_a_transformer_that_cannot_fit_without_labels_gets_them_without_stray_warnings(sbm):
    # its tags allow y=None, but its fit fails without y: it gets y, and is charged; the
    # warnings of the fit without y (every cross-validated fit failed) are not shown
    G, y = sbm
    Z = _mb().fit_transform(G)
    sfs = SequentialFeatureSelector(LogisticRegression(), n_features_to_select=1, cv=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step = NodeWise(sfs).fit(Z[:40], y[:40])
    ref = clone(sfs).fit(np.asarray(Z.features)[:40], y[:40])
    np.testing.assert_array_equal(step.estimator_.get_support(), ref.get_support())
    assert privacy_report(G).epsilon_for("labels") == np.inf


class _Untagged:
    """A duck-typed transformer without scikit-learn's tags (``needs_y``: its fit needs y)."""

    def __init__(self, needs_y=False):
        self.needs_y = needs_y

    def get_params(self, deep=True):
        return {"needs_y": self.needs_y}

    def set_params(self, **params):
        self.needs_y = params.get("needs_y", self.needs_y)
        return self

    def fit(self, X, y=None):
        if self.needs_y and y is None:
            raise ValueError("y is needed")
        self.y_ = y
        return self

    def transform(self, X):
        return X


def test_a_transformer_without_tags_is_tried_without_labels(sbm):
    G, y = sbm
    Z = _mb().fit_transform(G)
    assert NodeWise(_Untagged()).fit(Z[:40], y[:40]).estimator_.y_ is None
    assert privacy_report(G).epsilon_for("labels") == 0.0
    step = NodeWise(_Untagged(needs_y=True)).fit(Z[:40], y[:40])
    np.testing.assert_array_equal(step.estimator_.y_, y[:40])
    assert privacy_report(G).epsilon_for("labels") == np.inf


def test_a_budget_refuses_a_read_of_the_labels_in_the_clear(sbm):
    G, y = sbm
    G = GraphData(G.features, G.adjacency, budget=5.0)
    Z = _mb().fit_transform(G)
    step = NodeWise(SelectKBest(f_classif, k=2))
    with pytest.raises(BudgetExceededError, match=r"labels y of 40 user\(s\).*no privacy "
                                                  r"budget admits"):
        step.fit(Z[:40], y[:40])
    assert not hasattr(step, "estimator_")
    assert privacy_report(G).epsilon_for("labels") == 0.0


@pytest.mark.parametrize("make", [StandardScaler, lambda: PCA(2, random_state=0)],
                         ids=["StandardScaler", "PCA"])
def test_an_unsupervised_transformer_reads_no_labels_and_is_unchanged(sbm, make):
    G, y = sbm
    Z = _mb().fit_transform(G)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step = NodeWise(make()).fit(Z[:40], y[:40])
    ref = make().fit(np.asarray(Z.features)[:40], y[:40])
    np.testing.assert_array_equal(np.asarray(step.transform(Z).features),
                                  ref.transform(np.asarray(Z.features)))
    assert _label_reads(G.ledger) == [] and step.ledger_ is G.ledger   # reports: kept
    assert privacy_report(G).epsilon_for("labels") == 0.0
    assert privacy_report(step).epsilon_for("features") == pytest.approx(1.0)
    # on the users' raw features: charged for the features, as before, not for labels
    raw = NodeWise(make()).fit(G[:40], y[:40])
    assert _label_reads(G.ledger) == [] and raw.ledger_ is G.ledger
    assert privacy_report(G).epsilon_for("features") == np.inf


# ---------------------------------------------------------------- edges (EdgeRR)

@pytest.mark.parametrize("before", [
    KProp(steps=2), GCNAggregation(), PPRPropagation(), FeatureSmoothing(steps=1),
    Pipeline([("kprop", KProp(steps=1)), ("scale", NodeWise(StandardScaler()))]),
], ids=["KProp", "GCNAggregation", "PPRPropagation", "FeatureSmoothing", "KProp-then-scaler"])
def test_an_edge_mechanism_after_a_step_that_read_the_true_edges_is_refused(sbm, before):
    G, y = sbm
    name = type(before[0] if isinstance(before, Pipeline) else before).__name__
    pipe = Pipeline([("mb", _mb()), ("before", before),
                     ("edges", EdgeRR(eps=2.0, random_state=0))])
    with pytest.raises(ValueError, match=rf"a step before EdgeRR read the true edges "
                                         rf"\({name}\).*Put EdgeRR first"):
        pipe.fit(G[:50], y[:50])
    # nothing was collected for the edges
    assert all("edges" not in e.spec.protects for e in G.ledger.entries())


def test_a_union_with_a_branch_that_read_the_true_edges_is_refused_too(sbm):
    # the union rebuilt its output and dropped the mark: EdgeRR after it was accepted
    from skldp.baselines import GraphFeatureUnion
    G, y = sbm
    pipe = Pipeline([("mb", _mb()),
                     ("union", GraphFeatureUnion([("k", KProp(steps=2)), ("p", "passthrough")])),
                     ("edges", EdgeRR(eps=2.0, random_state=0))])
    with pytest.raises(ValueError, match=r"read the true edges \(KProp\)"):
        pipe.fit(G[:50], y[:50])


def test_structural_features_read_the_true_edges_too(sbm):
    G, _ = sbm
    Z = StructuralFeatures(degree_bins=2, n_eigenvectors=2, n_components=4,
                           random_state=0).fit_transform(G)
    with pytest.raises(ValueError, match=r"read the true edges \(StructuralFeatures\)"):
        EdgeRR(eps=2.0, random_state=0).fit(Z)


def test_edges_read_after_the_edge_mechanism_are_its_reports(sbm):
    G, y = sbm
    pipe = Pipeline([("mb", _mb()), ("edges", EdgeRR(eps=2.0, random_state=0)),
                     ("kprop", KProp(steps=2)), ("scale", NodeWise(StandardScaler()))])
    out = pipe.fit(G[:50], y[:50]).transform(G)
    # the same as the steps run one by one; the features' origin is as it always was
    Gr = EdgeRR(eps=2.0, random_state=0).fit_transform(_mb().fit_transform(G))
    Zk = KProp(steps=2).fit_transform(Gr)
    ref = StandardScaler().fit(np.asarray(Zk.features)[:50]).transform(np.asarray(Zk.features))
    np.testing.assert_allclose(np.asarray(out.features), ref, rtol=1e-6)
    assert len(out._store.feature_origin) == 3
    assert privacy_report(pipe).epsilon_for("edges") == 2.0
    # a feature step that reads no adjacency may come before the edge mechanism
    Pipeline([("mb", _mb()), ("scale", NodeWise(StandardScaler())),
              ("edges", EdgeRR(eps=2.0, random_state=0))]).fit(G[:50], y[:50])


def test_a_sampled_adjacency_is_still_refused_as_before(sbm):
    G, _ = sbm
    S = DegreeBoundedSampler(3, random_state=0).fit_transform(KProp().fit_transform(G))
    with pytest.raises(ValueError, match="no device can compute"):
        EdgeRR(eps=2.0, random_state=0).fit(S)


# ------------------------------------------- labels (a classifier's label domain)
@pytest.mark.parametrize("name", ["LPGNNClassifier", "RGNNClassifier"])
def test_a_label_domain_read_from_the_labels_is_charged(binary_sbm, name):
    # classes=None was only warned about: the report and a budget cap showed eps_x + eps_y
    from skldp import PrivacyLeakWarning, models

    G0, y = binary_sbm(n=60, d=6)
    rows = np.arange(0, 60, 2)
    options = {"alpha": 0.0} if name == "RGNNClassifier" else {"device": "cpu"}

    def pipe(**kw):
        clf = getattr(models, name)(eps_y=1.0, epochs=2, random_state=0, **options, **kw)
        return Pipeline([("mb", _mb()), ("clf", clf)])

    G = G0.new_simulation()
    with pytest.warns(PrivacyLeakWarning, match=r"classes.*charges.*epsilon=inf"):
        fitted = pipe().fit(G[rows], y[rows])
    line = (f"{name}(classes=None) read the users' labels in the clear: epsilon=inf "
            f"({len(rows)} users)")
    for report in (privacy_report(fitted), privacy_report(G)):
        assert np.isinf(report.epsilon_for("labels")) and line in str(report)
    capped = G0.new_simulation(budget=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(BudgetExceededError, match=rf"{name}\(classes=None\) reads the label "
                                                      rf"domain.*to {name}"):
            pipe().fit(capped[rows], y[rows])
    # no label was sent (the features were collected before the classifier)
    assert [e.spec.protects for e in capped.ledger.entries()] == [("features",)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        fitted = pipe(classes=np.unique(y)).fit(capped[rows], y[rows])
    assert privacy_report(fitted).local_epsilon == 2.0
