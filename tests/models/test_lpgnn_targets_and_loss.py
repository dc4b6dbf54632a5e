"""LPGNNClassifier on tiny graphs: targets of nodes without labelled neighbours, the
"drop" loss, the validation loss with propagated predictions and refits."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skldp import GraphData
from skldp.models import LPGNNClassifier


def _tiny():
    # 0 - 1 - 2 a path, 3 - 4 an edge, 5 isolated
    A = sp.csr_array(np.array([[0, 1, 0, 0, 0, 0],
                               [1, 0, 1, 0, 0, 0],
                               [0, 1, 0, 0, 0, 0],
                               [0, 0, 0, 0, 1, 0],
                               [0, 0, 0, 1, 0, 0],
                               [0, 0, 0, 0, 0, 0]], dtype=float))
    X = np.random.default_rng(0).random((6, 3))
    return GraphData(X, A)


@pytest.mark.parametrize("normalization", ["rw", "sym"])
def test_a_node_without_labelled_neighbours_keeps_its_own_label(normalization):
    # fit rows 0, 1, 3 and 5: KProp (no self loops) gives node 3 nothing (its only neighbour,
    # 4, is unlabelled) and the isolated node 5 nothing; both keep their own label (2, 1),
    # not the argmax of a zero row (class 0). Nodes 0 and 1 take their neighbours' label.
    G = _tiny()
    rows = np.array([0, 1, 3, 5])
    y = np.array([0, 1, 2, 1])
    clf = LPGNNClassifier(eps_y=np.inf, classes=[0, 1, 2], y_steps=1, x_steps=0,
                          normalization=normalization, epochs=1, early_stopping=False,
                          device="cpu").fit(G[rows], y)
    targets = clf._fit_targets(y, G[rows]).numpy()
    np.testing.assert_array_equal(targets, [1, 0, 2, 1])
    assert clf.label_agreement_ == 0.5


def test_drop_loss_is_the_mean_over_the_kept_rows():
    G = _tiny()
    rows = np.array([0, 1, 2, 3, 4])
    y = np.array([0, 1, 2, 0, 1])
    clf = LPGNNClassifier(eps_y=1.0, classes=[0, 1, 2], disagreement="drop",
                          propagate_predictions=False, random_state=0, epochs=1,
                          early_stopping=False, device="cpu").fit(G[rows], y)
    T = clf.transition_matrix_
    z = torch.tensor([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0], [0.0, 0.0, 3.0], [-1.0, 1.0, 0.0]])
    t = torch.tensor([2, -100, 0, -100])
    q = torch.softmax(z.double(), 1).numpy() @ T
    expected = -(np.log(q[0, 2]) + np.log(q[2, 0])) / 2   # 2 rows kept, not 4
    assert float(clf._loss(z, t, None)) == pytest.approx(expected, rel=1e-5)
    # every row dropped: 0, not NaN
    assert float(clf._loss(z, torch.full((4,), -100), None)) == 0.0


def test_validation_loss_reads_the_model_outputs_with_propagated_predictions():
    # Training steps fit the propagated posteriors; validation (no gradient) scores the
    # model's own logits z with the corrected loss -log((softmax(z) T)[t]).
    G = _tiny()
    rows = np.array([0, 1, 2, 3, 4])
    y = np.array([0, 1, 2, 0, 1])
    clf = LPGNNClassifier(eps_y=1.0, classes=[0, 1, 2], y_steps=2, selection="loss",
                          random_state=0, epochs=1, early_stopping=False,
                          device="cpu").fit(G[rows], y)
    assert clf.propagate_predictions
    T = clf.transition_matrix_
    z = torch.tensor([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0], [0.0, 0.0, 3.0]])
    t = torch.tensor([2, 1, 0])
    q = torch.softmax(z.double(), 1).numpy() @ T
    expected = -np.mean(np.log(q[[0, 1, 2], [2, 1, 0]]))
    with torch.no_grad():
        assert float(clf._validation_score(z, t, None)) == pytest.approx(expected, rel=1e-5)


def test_refit_with_another_label_budget_equals_a_fresh_fit():
    # The transition matrix moved to the device is the fit's own: a second fit of the same
    # estimator at another eps_y trains with the new matrix, not the first fit's.
    rng = np.random.default_rng(1)
    n = 30
    A = sp.random(n, n, density=0.15, random_state=2, format="csr")
    A = ((A + A.T) > 0).astype(float)
    y = np.arange(n) % 3
    G = GraphData(rng.random((n, 4)) + np.eye(3)[y] @ rng.random((3, 4)), A)
    kw = dict(classes=[0, 1, 2], y_steps=1, x_steps=1, epochs=5, early_stopping=False,
              random_state=0, device="cpu")
    clf = LPGNNClassifier(eps_y=0.5, **kw).fit(G, y)
    clf.set_params(eps_y=3.0).fit(G, y)
    fresh = LPGNNClassifier(eps_y=3.0, **kw).fit(G, y)
    np.testing.assert_allclose(clf.transition_matrix_, fresh.transition_matrix_)
    np.testing.assert_allclose(clf.loss_curve_, fresh.loss_curve_, rtol=1e-6)
    np.testing.assert_allclose(clf.predict_proba(G), fresh.predict_proba(G), atol=1e-6)


def test_gat_heads_and_no_input_dropout_reach_the_module():
    # Dropout after each hidden activation, none on the (propagated) input; heads of the
    # GAT backbone's hidden layers.
    G = _tiny()
    clf = LPGNNClassifier(eps_y=np.inf, classes=[0, 1, 2], backbone="gat", heads=3,
                          dropout=0.5, epochs=1, early_stopping=False, device="cpu")
    clf.fit(G, np.array([0, 1, 2, 0, 1, 2]))
    assert [layer.heads for layer in clf.module_.layers] == [3, 1]
    assert clf.module_._input_dropout() == 0.0 and clf.module_.dropout == 0.5


def test_the_kept_feature_propagation_is_the_normalizations_own():
    # KProp's operator is kept with the graph between fits: a fit with "sym" after one
    # with "rw" on the same (directed) graph propagates with its own normalization, as
    # on a new graph.
    rng = np.random.default_rng(1)
    n = 30
    A = sp.random(n, n, density=0.15, random_state=2, format="csr")
    A = (A > 0).astype(float)
    y = np.arange(n) % 3
    G = GraphData(rng.random((n, 4)), A)
    kw = dict(eps_y=np.inf, classes=[0, 1, 2], y_steps=0, x_steps=2, epochs=3,
              early_stopping=False, random_state=0, device="cpu")
    rw = LPGNNClassifier(normalization="rw", **kw).fit(G, y)
    after_rw = LPGNNClassifier(normalization="sym", **kw).fit(G, y)
    G2 = GraphData(np.asarray(G), A.copy())   # another matrix: nothing kept from G's
    alone = LPGNNClassifier(normalization="sym", **kw).fit(G2, y)
    assert not np.allclose(rw.loss_curve_, alone.loss_curve_)
    np.testing.assert_allclose(after_rw.loss_curve_, alone.loss_curve_, rtol=1e-6)
    np.testing.assert_allclose(after_rw.predict_proba(G), alone.predict_proba(G2), atol=1e-6)
