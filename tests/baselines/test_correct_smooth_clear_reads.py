"""CorrectAndSmooth reads the training labels and the graph itself: when its base model
protected them (edges an edge mechanism collected, a central DP training that covers the
labels or the edges), what C&S reads in the clear is charged (epsilon=inf), and a budget
refuses it. Nothing is charged when nothing protected them (taken as given)."""

import threading

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.ensemble import VotingClassifier
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.central import DPGNNClassifier, DPMLPClassifier
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse
from skldp.population import BudgetExceededError

TRAIN = np.arange(0, 60, 2)


@pytest.fixture
def graph(small_graph):
    A, X, y = small_graph
    return (lambda budget=None: GraphData(X, A, budget=budget)), y


def _collected_lp():
    return Pipeline([("edges", EdgeRR(eps=1.0, random_state=0)),
                     ("lp", LabelPropagationClassifier())])


def _dpgnn():
    return DPGNNClassifier(max_degree=2, classes=[0, 1], batch_size=5, n_steps=2,
                           noise_multiplier=5.0, hidden_size=4, device="cpu", random_state=0)


def _clear(report, what):
    return [s for s in report.spends if s.model == "clear" and what in s.protects]


# ------------------------------------------------- the base model collected the edges

def test_propagating_over_the_true_edges_after_the_base_collected_them_is_charged(graph):
    make, y = graph
    G = make()
    cs = CorrectAndSmooth(_collected_lp()).fit(G[TRAIN], y[TRAIN])
    assert privacy_report(cs).epsilon_for("edges") == pytest.approx(1.0)   # fit: EdgeRR only
    cs.predict_proba(G)   # C&S propagates over G's adjacency: the users' true edges
    for report in (privacy_report(cs), privacy_report(G)):
        assert report.epsilon_for("edges") == np.inf
        assert "CorrectAndSmooth read the users' edges in the clear: epsilon=inf (60 users)" \
            in str(report)


def test_a_budget_refuses_the_true_edges_after_the_base_collected_them(graph):
    make, y = graph
    G = make(budget=1.0)
    cs = CorrectAndSmooth(_collected_lp()).fit(G[TRAIN], y[TRAIN])
    with pytest.raises(BudgetExceededError, match=r"CorrectAndSmooth propagates over the "
                                                  r"adjacency.*Collect the edges before "
                                                  r"CorrectAndSmooth"):
        cs.predict(G[[0]])
    assert privacy_report(G).epsilon_for("edges") == pytest.approx(1.0)


def test_an_edge_collection_asked_again_for_free_is_seen_too(graph):
    # the base's EdgeRR repeats a request already answered (free, not a new ledger entry):
    # the edges C&S reads are still the ones that collection protected
    make, y = graph
    G = make()
    EdgeRR(eps=1.0, random_state=0).fit_transform(G)
    cs = CorrectAndSmooth(_collected_lp()).fit(G[TRAIN], y[TRAIN])
    cs.predict(G)
    assert privacy_report(G).epsilon_for("edges") == np.inf


def test_given_the_collected_graph_it_propagates_over_the_reports(graph):
    # the documented way: collect the edges first, give C&S the collected graph
    make, y = graph
    G = make(budget=1.0)
    Gr = EdgeRR(eps=1.0, random_state=0).fit_transform(G)
    cs = CorrectAndSmooth(LabelPropagationClassifier()).fit(Gr[TRAIN], y[TRAIN])
    assert cs.score(Gr, y) > 0.6
    report = privacy_report(cs)
    assert report.local_epsilon == pytest.approx(1.0) and not _clear(report, "edges")
    with pytest.raises(BudgetExceededError, match="Collect the edges before"):
        cs.predict(G)    # the true graph, after a fit on the collected one


def test_the_true_graph_is_taken_as_given_when_nothing_collected_it(graph):
    make, y = graph
    G = make(budget=1.0)
    CorrectAndSmooth(LabelPropagationClassifier()).fit(G[TRAIN], y[TRAIN]).predict(G)
    assert len(G.ledger) == 0


# ------------------------------------------- a central DP base model (labels, edges)

def test_a_central_base_that_protects_the_labels_charges_the_clean_labels(graph):
    make, y = graph
    G = make()
    cs = CorrectAndSmooth(_dpgnn()).fit(G[TRAIN], y[TRAIN])
    report = privacy_report(cs)
    assert report.epsilon_for("labels") == np.inf
    assert "CorrectAndSmooth read the users' labels in the clear: epsilon=inf (30 users)" \
        in str(report)
    assert not _clear(report, "edges")
    cs.predict(G)   # DP-GNN protects the edges too: the true ones, propagated, are charged
    assert privacy_report(cs).epsilon_for("edges") == np.inf


def test_a_budget_refuses_the_clean_labels_to_a_central_base(graph):
    make, y = graph
    G = make(budget=10.0)
    cs = CorrectAndSmooth(_dpgnn())
    with pytest.raises(BudgetExceededError, match=r"central DP training \(DPGNNClassifier\) "
                                                  r"protects them.*label_mechanism"):
        cs.fit(G[TRAIN], y[TRAIN])
    assert not hasattr(cs, "estimator_") and not hasattr(cs, "train_labels_")
    assert privacy_report(G).epsilon_for("labels") == 0.0


def test_a_central_base_with_collected_labels_and_edges_stays_finite(graph):
    # what the refusals name: a label mechanism on C&S and the collected graph
    make, y = graph
    G = make(budget=10.0)
    Gr = EdgeRR(eps=1.0, random_state=0).fit_transform(G)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0)
    cs = CorrectAndSmooth(_dpgnn(), label_mechanism=rr).fit(Gr[TRAIN], y[TRAIN])
    cs.predict(Gr)
    report = privacy_report(cs)
    assert not _clear(report, "labels") and not _clear(report, "edges")
    assert report.local_epsilon == pytest.approx(2.0) and 0 < report.central_epsilon < 8


def test_a_central_base_that_protects_the_edges_charges_the_true_ones(graph):
    # labels collected (finite), graph given: DP-GNN's guarantee covers the edges, the
    # propagation over the true ones does not
    make, y = graph
    G = make(budget=10.0)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0)
    cs = CorrectAndSmooth(_dpgnn(), label_mechanism=rr).fit(G[TRAIN], y[TRAIN])
    assert privacy_report(cs).epsilon_for("labels") == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError, match=r"or by a central DP training that "
                                                  r"protects them.*Collect the edges"):
        cs.predict(G)
    assert privacy_report(G).epsilon_for("edges") == 0.0
    H = make()
    CorrectAndSmooth(_dpgnn(), label_mechanism=rr).fit(H[TRAIN], y[TRAIN]).predict(H)
    assert privacy_report(H).epsilon_for("edges") == np.inf


def test_a_central_base_that_does_not_use_the_graph_leaves_it_given(graph):
    # DP-MLP protects features and labels: the labels are charged, the graph is not
    make, y = graph
    G = make()
    mlp = DPMLPClassifier(classes=[0, 1], accountant="hypergeometric", batch_size=5,
                          n_steps=2, noise_multiplier=5.0, hidden_size=4, device="cpu",
                          random_state=0)
    cs = CorrectAndSmooth(mlp).fit(G[TRAIN], y[TRAIN])
    cs.predict(G)
    report = privacy_report(cs)
    assert report.epsilon_for("labels") == np.inf and report.epsilon_for("edges") == 0.0


# ------------------------------------------- only the base model's own collections count

class _CollectsAside(LabelPropagationClassifier):
    """Label propagation on the graph it is given, after an edge collection it does not
    keep: what another thread collecting on the same users does meanwhile."""

    def fit(self, X, y):
        EdgeRR(eps=1.0, random_state=3).fit_transform(X.full())
        return super().fit(X, y)


def test_a_collection_the_base_does_not_hold_is_not_its(graph):
    # Before: every collection on the population during the base's fit counted (the
    # ledger since a mark): another thread's EdgeRR made C&S charge (or refuse) its
    # propagation over the true graph, on which its base was fitted.
    # Now the base's read of the true graph counts, these users' edges being collected
    # (aside): charged as that read, not as a C&S fitted on collected edges.
    make, y = graph
    G = make(budget=5.0)
    with pytest.raises(BudgetExceededError, match="_CollectsAside would read the true graph"):
        CorrectAndSmooth(_CollectsAside()).fit(G[TRAIN], y[TRAIN])
    G = make()
    cs = CorrectAndSmooth(_CollectsAside()).fit(G[TRAIN], y[TRAIN])
    cs.predict_proba(G)
    assert sorted(e.spec.kind.rsplit(".", 1)[-1] for e in G.ledger.entries()
                  if e.spec.model == "clear") == ["CorrectAndSmooth", "_CollectsAside"]
    assert not cs._fit_on_collected_edges   # the aside collection is not its base's


def test_labels_the_users_sent_before_are_not_clean_labels(graph):
    # Before: labels randomized before C&S (and passed as y) were charged as a read of the
    # clean labels around a central base; the budget refused them.
    make, y = graph
    G = make(budget=10.0)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit()
    y_sent = rr.randomize(y[TRAIN], G[TRAIN])
    cs = CorrectAndSmooth(DPMLPClassifier(classes=[0, 1], batch_size=5, epochs=1,
                                          noise_multiplier=5.0, accountant="hypergeometric",
                                          random_state=0))
    cs.fit(G[TRAIN], y_sent)
    assert privacy_report(G).epsilon_for("labels") == pytest.approx(1.0)
    assert _clear(privacy_report(G), "labels") == []


# --------------------------------- refused before a central base model spends anything

def _dpmlp():
    return DPMLPClassifier(classes=[0, 1], accountant="hypergeometric", batch_size=5,
                           n_steps=2, noise_multiplier=5.0, hidden_size=4, device="cpu",
                           random_state=0)


class _OwnWrapper(DPMLPClassifier):
    """A user's own class: what its fit does is not known from its parameters."""


@pytest.mark.parametrize("base", [
    _dpgnn, lambda: Pipeline([("mlp", _dpmlp())]),
    lambda: VotingClassifier([("mlp", _dpmlp()), ("lp", LabelPropagationClassifier())],
                             voting="soft")])
def test_the_refusal_of_the_clean_labels_comes_before_the_central_training(graph, base):
    # Before: the base's DP-SGD training ran and was charged (central epsilon 0.22 of a
    # budget of 10), then C&S refused the clean labels: the spend bought nothing.
    make, y = graph
    G = make(budget=10.0)
    with pytest.raises(BudgetExceededError, match=r"central DP training \(DP\w+Classifier\) "
                                                  r"protects them.*label_mechanism"):
        CorrectAndSmooth(base()).fit(G[TRAIN], y[TRAIN])
    assert len(G.ledger) == 0 and privacy_report(G).central_epsilon == 0.0


def test_the_early_refusal_says_what_the_refusal_after_the_fit_says(graph):
    # a user's own class around the trainer is not known before its fit: refused after it,
    # with the same words (the base's spend is then kept)
    make, y = graph
    early, late = make(budget=10.0), make(budget=10.0)
    with pytest.raises(BudgetExceededError) as first:
        CorrectAndSmooth(_dpmlp()).fit(early[TRAIN], y[TRAIN])
    with pytest.raises(BudgetExceededError) as second:
        CorrectAndSmooth(_OwnWrapper(**_dpmlp().get_params())).fit(late[TRAIN], y[TRAIN])
    assert str(first.value) == str(second.value).replace("_OwnWrapper", "DPMLPClassifier")
    assert len(early.ledger) == 0 and privacy_report(late).central_epsilon > 0


def test_a_label_mechanism_in_the_base_is_not_refused_early(graph):
    # the base randomizes the labels it is given: C&S propagates what the users sent
    make, y = graph
    G = make(budget=10.0)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0)
    base = VotingClassifier([("mlp", _dpmlp()),
                             ("lp", LabelPropagationClassifier(label_mechanism=rr))],
                            voting="soft")
    cs = CorrectAndSmooth(base).fit(G[TRAIN], y[TRAIN])
    report = privacy_report(G)
    assert report.epsilon_for("labels") == pytest.approx(1.0) and report.central_epsilon > 0
    with pytest.raises(BudgetExceededError, match="label_mechanism"):   # and without it:
        CorrectAndSmooth(clone(base).set_params(lp__label_mechanism=None)).fit(
            G[TRAIN], y[TRAIN])
    assert privacy_report(G).central_epsilon == report.central_epsilon   # nothing more
    assert cs.train_labels_.shape == (len(TRAIN),)


# ------------------------------- label reports the fitted base model does not hold

def _randomize(X, y, seed=5):
    return LabelRandomizedResponse(1.0, classes=[0, 1], random_state=seed).fit().randomize(
        y, X)


class _RandomizesOutOfSight(LabelPropagationClassifier):
    """Randomizes its labels itself and keeps the mechanism nowhere C&S can see it."""

    def fit(self, X, y):
        return super().fit(X, _randomize(X, y))


class _RandomizesInSight(LabelPropagationClassifier):
    """The same, keeping the fitted mechanism as a fitted attribute."""

    def fit(self, X, y):
        self.rr_ = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=5).fit()
        return super().fit(X, self.rr_.randomize(y, X))


class _AnotherThreadCollects:
    """A base model's fit during which another thread collects the labels of ``rows``."""

    rows = None

    def fit(self, X, y):
        G = X.full()
        rows = np.arange(len(G)) if self.rows is None else self.rows
        other = threading.Thread(target=_randomize, args=(G[rows], _Y[rows], 7))
        other.start()
        other.join()
        return super().fit(X, y)


_Y = np.repeat([0, 1], 30)


class _CentralWithThread(_AnotherThreadCollects, DPMLPClassifier):
    pass


class _PlainWithThread(_AnotherThreadCollects, LabelPropagationClassifier):
    pass


class _PlainWithThreadOnOthers(_PlainWithThread):
    rows = np.arange(1, 60, 2)   # users outside the training rows


def test_labels_randomized_out_of_sight_are_charged_as_clean(graph):
    # Before: C&S propagated every label report sent during the base's fit as the base's,
    # whoever sent it. Now only the collections the fitted base holds count; in doubt, C&S
    # propagates the clean labels and is charged their read.
    make, y = graph
    G = make(budget=10.0)
    with pytest.raises(BudgetExceededError, match=r"does not hold.*label_mechanism_"):
        CorrectAndSmooth(_RandomizesOutOfSight()).fit(G[TRAIN], y[TRAIN])
    assert privacy_report(G).epsilon_for("labels") == pytest.approx(1.0)   # its own only
    H = make()
    cs = CorrectAndSmooth(_RandomizesOutOfSight()).fit(H[TRAIN], y[TRAIN])
    np.testing.assert_array_equal(cs.classes_[cs.train_labels_], y[TRAIN])
    assert privacy_report(cs).epsilon_for("labels") == np.inf
    # kept in sight, its reports are propagated and the budget admits the fit
    cs = CorrectAndSmooth(_RandomizesInSight()).fit(G[TRAIN], y[TRAIN])
    np.testing.assert_array_equal(cs.classes_[cs.train_labels_], _randomize(G[TRAIN], y[TRAIN]))
    assert privacy_report(G).epsilon_for("labels") == pytest.approx(1.0)


def test_another_threads_label_collection_does_not_make_the_clean_labels_free(graph):
    # Before: around a central base, another thread's collection of the same users' labels
    # during the fit was taken as the base's: C&S propagated its reports and charged nothing
    make, y = graph
    G = make()
    cs = CorrectAndSmooth(_CentralWithThread(**_dpmlp().get_params())).fit(G[TRAIN], y[TRAIN])
    np.testing.assert_array_equal(cs.classes_[cs.train_labels_], y[TRAIN])
    report = privacy_report(G)
    assert report.epsilon_for("labels") == np.inf and _clear(report, "labels")


def test_another_threads_label_collection_meets_no_spurious_error(graph):
    # Before: with C&S's own label mechanism, "Both CorrectAndSmooth and its estimator
    # randomize the labels"; of other users only, "no label collection covers every
    # training user". Neither concerns the labels C&S propagates.
    make, y = graph
    G = make(budget=10.0)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0)
    cs = CorrectAndSmooth(_PlainWithThread(), label_mechanism=rr).fit(G[TRAIN], y[TRAIN])
    np.testing.assert_array_equal(cs.classes_[cs.train_labels_],
                                  cs.label_mechanism_.randomize(y[TRAIN], G[TRAIN]))
    H = make(budget=10.0)
    cs = CorrectAndSmooth(_PlainWithThreadOnOthers()).fit(H[TRAIN], y[TRAIN])
    np.testing.assert_array_equal(cs.classes_[cs.train_labels_], y[TRAIN])
    assert privacy_report(H).epsilon_for("labels") == pytest.approx(1.0)   # the thread's
