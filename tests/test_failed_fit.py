"""A fit that fails leaves no fitted attribute it set: scikit-learn's check_is_fitted passed
on a mechanism whose transform then said it was not fitted."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skldp import GraphData
from skldp.mechanisms import GRRFSMechanism, LaplaceMechanism
from skldp.propagation import KProp


def test_a_failed_first_fit_leaves_the_step_unfitted():
    G = GraphData(np.random.default_rng(0).random((10, 3)))     # not categorical
    m = GRRFSMechanism(eps=1.0, domain_sizes=[3, 3, 3], random_state=0)
    with pytest.raises(ValueError, match="not categorical"):
        m.fit(G)
    assert not hasattr(m, "n_features_in_")
    with pytest.raises(NotFittedError):
        check_is_fitted(m)
    k = KProp()
    with pytest.raises(ValueError, match="NaN"):
        k.fit(GraphData(np.array([[np.nan], [1.0]]), np.eye(2)))   # after n_features_in_
    with pytest.raises(NotFittedError):
        check_is_fitted(k)


def test_a_failed_refit_leaves_the_step_as_it_was():
    # the refit overwrote the bounds before it was refused: with the parameters set back,
    # transform answered the earlier collection again (free) with the failed fit's bounds,
    # and the two answers together gave the noise away
    X = np.random.default_rng(0).random((50, 2))
    m = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(X)
    first = m.transform(X)
    state = dict(vars(m))
    with pytest.raises(ValueError, match="overflow to inf"):
        m.set_params(feature_range=(-1e300, 1e300)).fit(X)
    assert m.feature_min_ is state["feature_min_"] and m.feature_max_ is state["feature_max_"]
    assert {k: v for k, v in vars(m).items() if k != "feature_range"} == \
        {k: v for k, v in state.items() if k != "feature_range"}
    np.testing.assert_array_equal(m.set_params(feature_range=(0, 1)).transform(X), first)


def test_a_refused_mechanism_says_the_earlier_read_was_charged_and_how_to_start_over():
    # the refusal of a mechanism after NodeWise(StandardScaler()) did not say that the
    # scaler's read of the raw features was already charged (epsilon inf): the corrected
    # pipeline's report then stated inf, citing a step it did not contain
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from skldp import NodeWise
    from skldp.accounting import privacy_report
    from skldp.mechanisms import MultiBitMechanism

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), rng.integers(0, 2, 40)
    A = sp.random(40, 40, density=0.1, random_state=0, format="csr")
    G = GraphData(X, ((A + A.T) > 0).astype(float), node_ids=[f"u{i}" for i in range(40)])
    bad = Pipeline([("sc", NodeWise(StandardScaler())),
                    ("mb", MultiBitMechanism(eps=1.0, feature_range=(-3, 3), random_state=0)),
                    ("clf", LogisticRegression())])
    with pytest.raises(ValueError, match=r"no device can compute.*An earlier step \(NodeWise\) "
                                         r"already read the raw features of 40 users.*"
                                         r"epsilon=inf.*G\.new_simulation\(\) on the graph "
                                         r"of raw data"):
        bad.fit(G[:30], y[:30])
    assert G.ledger.local_epsilon == np.inf
    # the advice works: the raw graph starts over with an empty ledger
    G0 = G.new_simulation()
    good = Pipeline([("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", LogisticRegression())]).fit(G0[:30], y[:30])
    assert G0.ledger.local_epsilon == 1.0
    assert "NodeWise" not in str(privacy_report(good))
    # nothing read before it: no such sentence
    H = GraphData(X).with_features(X, source="server")
    with pytest.raises(ValueError, match="no device can compute") as info:
        MultiBitMechanism(eps=1.0, feature_range=(0, 1)).fit(H)
    assert "already read" not in str(info.value)


# -- classifiers and DP trainers: a failed refit leaves the fitted model as it was --------
# (a refit that raised halfway left a new classes_ / ledger_ / label_mechanism_ beside the
# old module_: predict mapped old outputs to new labels, privacy_report followed the new
# ledger only; what users sent during the failed refit stays charged in their ledger)

def _state(est):
    return {k: v for k, v in vars(est).items()}


def _same_state(est, before):
    now = vars(est)
    assert now.keys() == before.keys()
    assert all(now[k] is before[k] for k in before)   # the very objects, none rebuilt


def test_a_refused_refit_keeps_the_report_of_the_model_it_keeps():
    from skldp.accounting import privacy_report
    from skldp.mechanisms import MultiBitMechanism
    from skldp.models import MLPHead

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), rng.integers(0, 2, 40)
    clf = MLPHead(epochs=2, random_state=0).fit(X, y)   # raw array: epsilon inf
    before = _state(clf)
    G = GraphData(X)
    Z = MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit_transform(G)
    with pytest.raises(ValueError, match="single class"):
        clf.fit(Z, np.zeros(40, int))
    _same_state(clf, before)
    assert privacy_report(clf).total_epsilon == np.inf           # was 1.0
    assert privacy_report(G).total_epsilon == 1.0                # the collection was sent
    # fitted on G1's reports (eps 4), a refit on G2's (eps 0.1) refused: still G1's
    G1, G2 = GraphData(X), GraphData(X.copy())
    Z1 = MultiBitMechanism(eps=4.0, feature_range=(0, 1), random_state=0).fit_transform(G1)
    Z2 = MultiBitMechanism(eps=0.1, feature_range=(0, 1), random_state=0).fit_transform(G2)
    clf = MLPHead(epochs=2, random_state=0).fit(Z1, y)
    with pytest.raises(ValueError, match="single class"):
        clf.fit(Z2, np.zeros(40, int))
    assert privacy_report(clf).total_epsilon == 4.0              # was 0.1


def _small_graph(n=40):
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    X = rng.random((n, 3))
    X[:, 0] += y
    A = sp.random(n, n, density=0.1, random_state=0, format="csr")
    return GraphData(X, ((A + A.T) > 0).astype(float)), y


def test_a_failed_refit_keeps_the_classes_of_the_module(monkeypatch):
    import skldp.models._base as mbase
    from skldp.models import GCNClassifier, MLPHead

    G, y = _small_graph()
    names = np.array(["cat", "dog"])[1 - y]
    # a ValueError in the validation split, after classes_ was set
    clf = MLPHead(epochs=3, validation=np.arange(30, 35), random_state=0).fit(G[:35], y[:35])
    old, before = clf.predict(G[:10]), _state(clf)
    with pytest.raises(ValueError, match="validation node"):
        clf.fit(G[:30], names[:30])
    _same_state(clf, before)
    np.testing.assert_array_equal(clf.predict(G[:10]), old)   # was ['cat' 'dog' ...]
    # Ctrl-C in training
    clf = GCNClassifier(epochs=3, random_state=0).fit(G[:30], y[:30])
    old, before = clf.predict(G[:10]), _state(clf)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(mbase, "train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(G[:30], names[:30])
    _same_state(clf, before)
    np.testing.assert_array_equal(clf.predict(G[:10]), old)


def test_a_refused_label_collection_keeps_the_noise_correction():
    from skldp.accounting import privacy_report
    from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
    from skldp.mechanisms import LabelRandomizedResponse
    from skldp.population import BudgetExceededError

    G0, y = _small_graph()
    for make in (lambda m: LabelPropagationClassifier(label_mechanism=m),
                 lambda m: CorrectAndSmooth(LabelPropagationClassifier(), label_mechanism=m)):
        for how in ("bad label", "budget"):
            G = G0.new_simulation()
            if how == "budget":
                G.population.set_budget(1.5)
            est = make(LabelRandomizedResponse(eps=1.0, classes=[0, 1]))   # (a refit: new labels)
            est.fit(G[:30], y[:30])
            p, before = est.predict_proba(G[30:]), _state(est)
            y2 = y[:30].copy()
            if how == "bad label":
                y2[0] = 7
            with pytest.raises((ValueError, BudgetExceededError)):
                est.fit(G[:30], y2)
            _same_state(est, before)                               # label_mechanism_ was gone
            np.testing.assert_array_equal(est.predict_proba(G[30:]), p)
            assert privacy_report(est).spends[0].step == "label_mechanism"


def test_a_label_collection_sent_before_a_failed_refit_stays_in_the_report(monkeypatch):
    import skldp.models._base as mbase
    from skldp.accounting import privacy_report
    from skldp.mechanisms import LabelRandomizedResponse
    from skldp.models import GCNClassifier

    G, y = _small_graph()
    clf = GCNClassifier(epochs=2, random_state=0, label_mechanism=LabelRandomizedResponse(
        eps=1.0, classes=[0, 1])).fit(G[:30], y[:30])
    before, eps = _state(clf), privacy_report(clf).total_epsilon

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(mbase, "train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(G[:30], y[:30])   # new labels sent (random_state=None), then interrupted
    _same_state(clf, before)
    assert privacy_report(clf).total_epsilon == eps + 1.0 == privacy_report(G).total_epsilon


def test_an_interrupted_dp_training_keeps_the_report_of_the_released_model(monkeypatch):
    import skldp.central._dpgnn as dpg
    from skldp.accounting import privacy_report
    from skldp.central import DPMLPClassifier

    rng = np.random.default_rng(0)
    X, y = rng.random((60, 3)).astype(np.float32), rng.integers(0, 2, 60)
    G1, G2 = GraphData(X), GraphData(X.copy())
    clf = DPMLPClassifier(classes=[0, 1], batch_size=20, n_steps=3, noise_multiplier=0.5,
                          accountant="hypergeometric",   # (no optional dependency)
                          random_state=0).fit(G1, y)
    before, eps = _state(clf), privacy_report(clf).total_epsilon

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(dpg, "train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        clf.set_params(noise_multiplier=5.0).fit(G2, y)
    before["noise_multiplier"] = clf.noise_multiplier   # (a parameter: set_params changed it)
    _same_state(clf, before)
    assert privacy_report(clf).total_epsilon == eps                # was G2's
    assert 0 < privacy_report(G2).total_epsilon < eps              # G2's users were charged


def test_a_refused_label_randomization_leaves_the_mechanism_unbound():
    from skldp.mechanisms import LabelRandomizedResponse
    from skldp.population import BudgetExceededError

    G, y = _small_graph()
    G.population.set_budget(0.5)
    m = LabelRandomizedResponse(eps=1.0, classes=[0, 1], random_state=0).fit()
    before = _state(m)
    with pytest.raises(BudgetExceededError):
        m.randomize(y, G)
    _same_state(m, before)   # was bound to G's users: other users were then refused
    H, _ = _small_graph()
    assert len(m.randomize(y, H)) == len(y)
    # a refused refit keeps the domain it had
    with pytest.raises(ValueError, match="at least two"):
        m.set_params(classes=[1]).fit()
    assert m.classes_.tolist() == [0, 1]


def test_every_fit_restores_once():
    from skldp.base import restores_on_failure
    from skldp.central import DPMLPClassifier
    from skldp.mechanisms import LabelRandomizedResponse, MultiBitMechanism
    from skldp.models import GCNClassifier

    code = restores_on_failure(lambda self: None).__code__

    def layers(f):
        n = 0
        while f is not None:
            n += getattr(f, "__code__", None) is code
            f = getattr(f, "__wrapped__", None)
        return n
    for cls in (MultiBitMechanism, DPMLPClassifier, LabelRandomizedResponse, GCNClassifier):
        assert layers(cls.__dict__.get("fit") or cls.fit) == 1, cls


def test_an_interrupted_randomize_stays_with_the_users_who_answered(monkeypatch):
    """Answers are recorded before the device program runs: a randomize interrupted there
    leaves the mechanism bound to those users (its report names them; its random numbers
    are not given to another population)."""
    import skldp.mechanisms._label_rr as label_rr
    from skldp.accounting import privacy_report
    from skldp.mechanisms import LabelRandomizedResponse

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 40)
    G, H = GraphData(rng.random((40, 2))), GraphData(rng.random((40, 2)))
    m = LabelRandomizedResponse(eps=1.0, classes=[0, 1, 2], random_state=None).fit()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(label_rr, "label_encode", interrupted)
        with pytest.raises(KeyboardInterrupt):
            m.randomize(y, G)
    assert privacy_report(G).total_epsilon == privacy_report(m).total_epsilon == 1.0
    with pytest.raises(ValueError, match="other users"):
        m.randomize(y, H)


def test_a_check_binds_no_users():
    """check_randomize sends nothing: refused or not, it leaves the mechanism free for
    other users."""
    from skldp.mechanisms import LabelRandomizedResponse
    from skldp.population import BudgetExceededError

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 30)
    G, H = GraphData(rng.random((30, 2))), GraphData(rng.random((30, 2)))
    G.population.set_budget(0.5)
    m = LabelRandomizedResponse(eps=1.0, classes=[0, 1]).fit()
    with pytest.raises(BudgetExceededError):
        m.check_randomize(y, G)
    m.check_randomize(y, H)
    assert m.population_ is None
    assert len(m.randomize(y, H)) == 30 and G.ledger.entries() == []
