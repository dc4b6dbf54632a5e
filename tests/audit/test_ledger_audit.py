"""audit_ledger: everything a user sends while a whole estimator is fitted, against its ledger."""

import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skldp.audit import audit_ledger
from skldp.mechanisms import (
    EdgeRR,
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    MultiBitMechanism,
    OneBitMechanism,
)
from skldp.models import LPGNNClassifier, MLPHead, RGNNClassifier, SolitudeClassifier
from skldp.propagation import PPRPropagation

X0, X1 = [0.0, 0.0], [1.0, 1.0]


def _quick_start(eps=1.0):
    """The README's quick start pipeline (a short head: the audit reads reports only)."""
    return Pipeline([("hds", HDSMechanism(eps=eps, feature_range=(0, 1), random_state=0)),
                     ("ppr", PPRPropagation(alpha=0.1)),
                     ("clf", MLPHead(epochs=2))])


def _check(res, claimed):
    assert res.epsilon_claimed == pytest.approx(claimed)
    assert not res.exceeds_claim, res.summary()
    assert res.epsilon_lower > 0.1 * claimed, res.summary()      # the audit has power


def test_readme_quick_start():
    _check(audit_ledger(_quick_start(), X0, X1, y0=0, y1=1, n_samples=3000), 1.0)


def test_readme_quick_start_search_over_eps():
    search = GridSearchCV(_quick_start(), {"hds__eps": [0.5, 1, 4]}, cv=2)
    _check(audit_ledger(search, X0, X1, y0=0, y1=1, n_samples=3000), 5.5)


@pytest.mark.slow
def test_nested_search():
    inner = GridSearchCV(_quick_start(), {"hds__eps": [0.5, 2.0]}, cv=2)
    nested = GridSearchCV(inner, {"cv": [2, 3]}, cv=2)
    _check(audit_ledger(nested, X0, X1, y0=0, y1=1, n_samples=2000), 2.5)


def test_lpgnn_default_pipeline():
    pipe = Pipeline([("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", LPGNNClassifier(eps_y=1.0, classes=[0, 1], epochs=2,
                                             random_state=0))])
    _check(audit_ledger(pipe, X0, X1, y0=0, y1=1, n_samples=3000), 2.0)


def test_rgnn_default_pipeline():
    from skldp.reconstruction import FrequencyReconstructor
    pipe = Pipeline([("grrfs", GRRFSMechanism(1.0, m=1, domain_sizes=2, random_state=0)),
                     ("rec", FrequencyReconstructor(1.0, 1, domain_sizes=2, hops=2)),
                     ("clf", RGNNClassifier(eps_y=1.0, classes=[0, 1], alpha=0.0, epochs=2,
                                            random_state=0))])
    _check(audit_ledger(pipe, X0, X1, y0=0, y1=1, n_samples=3000), 2.0)


def test_solitude_default_pipeline():
    # Solitude's study: edges and features private, labels in the clear (as in the paper)
    pipe = Pipeline([("edges", EdgeRR(4.0, random_state=0)),
                     ("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", SolitudeClassifier(epochs=2, random_state=0))])
    # edge reports are left out (the audit's graph is public): the features' 1
    _check(audit_ledger(pipe, X0, X1, y0=0, y1=1, n_samples=2000), 1.0)


def test_labels_randomized_by_a_classifier_are_audited_with_the_features():
    pipe = Pipeline([("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", MLPHead(epochs=2))])
    from skldp.baselines import LabelPropagationClassifier
    lp = LabelPropagationClassifier(
        label_mechanism=LabelRandomizedResponse(2.0, classes=[0, 1], random_state=0))
    _check(audit_ledger(lp, X0, X1, y0=0, y1=1, n_samples=3000), 2.0)
    _check(audit_ledger(pipe, X0, X1, y0=0, y1=1, n_samples=3000), 1.0)


def test_central_training_sends_no_report():
    from skldp.central import DPGNNClassifier
    clf = DPGNNClassifier(classes=[0, 1], batch_size=50, n_steps=2, noise_multiplier=1.0,
                          delta=1e-3, max_degree=4, random_state=0)
    with pytest.raises(ValueError, match="nothing to audit"):
        audit_ledger(clf, X0, X1, y0=0, y1=1, n_samples=200)


class _UnderClaiming(OneBitMechanism):
    """A mechanism whose epsilon_ states a tenth of what it spends."""

    def _epsilon_total(self):
        return super()._epsilon_total() / 10


def test_the_audit_catches_a_false_claim():
    pipe = Pipeline([("bit", _UnderClaiming(4.0, feature_range=(0, 1), split_eps=True,
                                            random_state=0)),
                     ("clf", MLPHead(epochs=2))])
    res = audit_ledger(pipe, X0, X1, y0=0, y1=1, n_samples=3000)
    assert res.epsilon_claimed == pytest.approx(0.4) and res.exceeds_claim


def test_bad_arguments():
    with pytest.raises(ValueError, match="two classes"):
        audit_ledger(_quick_start(), X0, X1, y0=1, y1=1)
    with pytest.raises(ValueError, match="same number"):
        audit_ledger(_quick_start(), [0.0], X1, y0=0, y1=1)
    with pytest.raises(ValueError, match="outputs"):
        audit_ledger(_quick_start(), X0, X1, y0=0, y1=1, outputs="some")
    # the same features and label for both groups: a bound of 0.0 whatever the estimator
    with pytest.raises(ValueError, match="x0 and x1 are the same"):
        audit_ledger(_quick_start(), X0, X0, y0=1, y1=1, classes=[0, 1], n_samples=10)


def test_predictions_are_post_processing_of_what_was_sent():
    # C&S around a label-private base propagates the labels the users sent: its predictions
    # add nothing to the record's bound
    from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
    cs = CorrectAndSmooth(LabelPropagationClassifier(
        label_mechanism=LabelRandomizedResponse(0.5, classes=[0, 1], random_state=0)))
    res = audit_ledger(cs, X0, X1, y0=0, y1=1, n_samples=3000, predictions=True)
    assert res.epsilon_claimed == pytest.approx(0.5) and not res.exceeds_claim, res.summary()


def test_predictions_catch_labels_used_in_the_clear():
    # a model fitted on the clean labels releases them: the audit sees it
    from skldp.baselines import LabelPropagationClassifier
    pipe = Pipeline([("mb", MultiBitMechanism(eps=0.5, feature_range=(0, 1), random_state=0)),
                     ("clf", LabelPropagationClassifier())])
    res = audit_ledger(pipe, X0, X1, y0=0, y1=1, n_samples=3000, predictions=True)
    assert res.exceeds_claim and res.output.endswith("predictions"), res.summary()
