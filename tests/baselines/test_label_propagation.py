"""LabelPropagationClassifier: closed form, sklearn conventions, private labels."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import LabelPropagationClassifier
from skldp.mechanisms import LabelRandomizedResponse


def _sbm(n=120, p_in=0.15, p_out=0.01, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n // n_classes)
    P = np.where(y[:, None] == y[None, :], p_in, p_out)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = (A | A.T).astype(float)
    return sp.csr_array(A), y


@pytest.fixture
def graph(small_graph):
    A, X, y = small_graph
    return GraphData(X, A), y


def _dense_reference(A, rows, labels, classes, alpha):
    """Zhou et al.'s closed form with a dense inverse: (1 - a)(I - a S)^-1 Y, rows normalised."""
    A = np.asarray(A.todense(), dtype=float)
    d = A.sum(1)
    dinv = np.where(d > 0, d ** -0.5, 0.0)
    S = dinv[:, None] * A * dinv[None, :]
    Y = np.zeros((len(A), len(classes)))
    Y[rows, np.searchsorted(classes, labels)] = 1.0
    F = (1 - alpha) * np.linalg.solve(np.eye(len(A)) - alpha * S, Y)
    return F / F.sum(1, keepdims=True)


@pytest.mark.parametrize("alpha", [0.5, 0.9, 0.99])
def test_matches_dense_closed_form(graph, alpha):
    G, y = graph
    train = np.arange(0, 60, 3)
    lp = LabelPropagationClassifier(alpha=alpha, tol=1e-10).fit(G[train], y[train])
    P = lp.predict_proba(G)
    ref = _dense_reference(G.adjacency, train, y[train], lp.classes_, alpha)
    np.testing.assert_allclose(P, ref, atol=1e-7)
    np.testing.assert_allclose(P.sum(1), 1.0)
    # a view returns the same rows of the whole-graph result
    np.testing.assert_allclose(lp.predict_proba(G[[5, 1]]), ref[[5, 1]], atol=1e-7)


def test_string_labels_and_accuracy(graph):
    G, y = graph
    names = np.array(["blue", "red"])[y]
    train = np.arange(0, 60, 4)
    lp = LabelPropagationClassifier().fit(G[train], names[train])
    assert list(lp.classes_) == ["blue", "red"]
    test = np.setdiff1d(np.arange(60), train)
    assert lp.score(G[test], names[test]) > 0.9


def test_unreached_component_gets_training_prior():
    # nodes 0-1-2 connected, 3-4 another component without labels, 5 isolated
    A = sp.csr_array(np.array([[0, 1, 0, 0, 0, 0], [1, 0, 1, 0, 0, 0], [0, 1, 0, 0, 0, 0],
                               [0, 0, 0, 0, 1, 0], [0, 0, 0, 1, 0, 0], [0] * 6]))
    G = GraphData(np.zeros((6, 1)), A)
    lp = LabelPropagationClassifier().fit(G[[0, 1, 2]], [1, 1, 0])
    P = lp.predict_proba(G)
    np.testing.assert_allclose(P[3:], [[1 / 3, 2 / 3]] * 3)
    assert lp.predict(G[[0]])[0] == 1


def test_alpha_zero_returns_training_labels(graph):
    G, y = graph
    lp = LabelPropagationClassifier(alpha=0.0).fit(G[[0, 59]], [0, 1])
    np.testing.assert_array_equal(lp.predict_proba(G[[0, 59]]), np.eye(2))
    np.testing.assert_allclose(lp.predict_proba(G[[10]]), [[0.5, 0.5]])


def test_sklearn_conventions_clone_params_pickle(graph):
    G, y = graph
    lp = LabelPropagationClassifier(alpha=0.8, max_iter=50)
    assert lp.get_params()["alpha"] == 0.8
    assert clone(lp).set_params(alpha=0.7).alpha == 0.7
    lp.fit(G[::2], y[::2])
    before = lp.predict_proba(G)
    blob = pickle.loads(pickle.dumps(lp))
    np.testing.assert_allclose(blob.predict_proba(G), before)
    # fitting does not keep the graph on the estimator (estimators stay small)
    assert len(pickle.dumps(lp)) < 5000
    assert not hasattr(clone(lp), "train_labels_")


def test_grid_search_over_alpha(graph):
    G, y = graph
    search = GridSearchCV(LabelPropagationClassifier(), {"alpha": [0.0, 0.5, 0.9]}, cv=3)
    search.fit(G, y)
    assert search.best_params_["alpha"] > 0  # propagation beats the class prior
    assert search.score(G[::5], y[::5]) > 0.9


def test_label_mechanism_noisy_labels_and_report(graph):
    G, y = graph
    rr = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0)
    lp = LabelPropagationClassifier(label_mechanism=rr).fit(G, y)
    assert lp.label_mechanism_ is not rr and lp.label_mechanism_.epsilon_ == 1.0
    np.testing.assert_array_equal(lp.classes_, [0, 1, 2])   # the public domain
    noisy = lp.label_mechanism_.randomize(y, G)
    np.testing.assert_array_equal(lp.train_labels_, noisy)  # only noisy labels are kept
    assert np.any(noisy != y)
    rep = privacy_report(lp)
    assert rep.epsilon_for("labels") == 1.0 and rep.local_epsilon == 1.0
    assert lp.predict_proba(G).shape == (60, 3)


def test_noise_correction_keeps_predictions_and_calibrates(graph):
    G, y = graph
    rr = LabelRandomizedResponse(0.5, classes=[0, 1], random_state=1)
    raw = LabelPropagationClassifier(label_mechanism=rr, noise_correction=False).fit(G, y)
    cor = LabelPropagationClassifier(label_mechanism=rr).fit(G, y)
    np.testing.assert_array_equal(raw.predict(G), cor.predict(G))
    # T^-1 pushes probabilities away from 1/2: the corrected model is more confident
    conf_raw = np.abs(raw.predict_proba(G)[:, 1] - 0.5)
    conf_cor = np.abs(cor.predict_proba(G)[:, 1] - 0.5)
    assert np.all(conf_cor >= conf_raw - 1e-12) and conf_cor.mean() > conf_raw.mean() + 0.05


def test_search_over_label_eps_counts_collections(graph):
    G, y = graph
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0)
    search = GridSearchCV(LabelPropagationClassifier(label_mechanism=rr),
                          {"label_mechanism__eps": [1.0, 2.0]}, cv=2).fit(G, y)
    rep = privacy_report(search)
    # two collections (eps 1 and 2), each answered once by every user: folds and refit reuse
    assert len(rep.spends) == 2
    assert rep.local_epsilon == pytest.approx(3.0)


def test_noisy_labels_still_beat_chance_on_sbm():
    A, y = _sbm(n=400, seed=3)
    G = GraphData(np.zeros((400, 1)), A)
    train = np.arange(0, 400, 2)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0)
    lp = LabelPropagationClassifier(label_mechanism=rr).fit(G[train], y[train])
    test = np.arange(1, 400, 2)
    # p(keep) = e/(e+1) = 0.73; propagation averages the noise away
    assert lp.score(G[test], y[test]) > 0.9


def test_errors(graph):
    G, y = graph
    with pytest.raises(TypeError, match="GraphData"):
        LabelPropagationClassifier().fit(np.asarray(G), y)
    with pytest.raises(ValueError, match="-1"):
        LabelPropagationClassifier().fit(G, np.where(np.arange(60) == 0, -1, y))
    with pytest.raises(ValueError, match="alpha"):
        LabelPropagationClassifier(alpha=1.0).fit(G, y)
    with pytest.raises(TypeError, match="alpha"):
        LabelPropagationClassifier(alpha="0.5").fit(G, y)
    with pytest.raises(ValueError, match="rows"):
        LabelPropagationClassifier().fit(G[:10], y[:9])
    directed = GraphData(np.zeros((3, 1)), sp.csr_array(np.array([[0, 1, 0], [0, 0, 1],
                                                                  [0, 0, 0]])))
    with pytest.raises(ValueError, match="symmetric"):
        LabelPropagationClassifier().fit(directed[[0, 1]], [0, 1])
    with pytest.raises(TypeError, match="label_mechanism"):
        LabelPropagationClassifier(label_mechanism=object()).fit(G, y)
    lp = LabelPropagationClassifier().fit(G, y)
    other = GraphData(np.zeros((10, 1)), sp.eye(10, format="csr"), node_ids=np.arange(100, 110),
                      population=G)
    with pytest.raises(ValueError, match="fitted on nodes"):
        lp.predict(other)
    with pytest.raises(ValueError, match="another population"):
        lp.predict(GraphData(np.zeros((10, 1)), sp.eye(10, format="csr")))


def test_convergence_warning(graph):
    G, y = graph
    lp = LabelPropagationClassifier(alpha=0.99, tol=1e-12, max_iter=1).fit(G[::2], y[::2])
    with pytest.warns(ConvergenceWarning):
        lp.predict_proba(G)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LabelPropagationClassifier().fit(G[::2], y[::2]).predict_proba(G)


@pytest.mark.parametrize("marker", [-2, np.nan, None])
def test_every_unlabelled_marker_is_refused(graph, marker):
    # only -1 was refused: -2 became a class (and was predicted), None gave a TypeError
    G, y = graph
    y = y.astype(object if marker is None else float)
    y[0] = marker
    with pytest.raises(ValueError, match=r"1 row\(s\) unlabelled.*fit only on labelled"):
        LabelPropagationClassifier().fit(G, y)
    names = np.array(["a", "b"], dtype=object)[np.asarray(graph[1])]
    names[3] = None
    with pytest.raises(ValueError, match="unlabelled"):
        LabelPropagationClassifier().fit(G, names)


def test_sym_operator_kept_with_the_adjacency():
    # S = D^-1/2 A D^-1/2 was kept in the memo of the features, so every GraphData with
    # new features on the same adjacency (a mechanism's reports, another pipeline step)
    # normalised the graph again (110 ms at 2M entries); it is now kept with the adjacency
    from skldp.baselines._graph_ops import sym_normalized_adjacency
    rng = np.random.default_rng(0)
    A = sp.random(80, 80, density=0.08, random_state=1, format="csr")
    A.data = rng.uniform(0.5, 2.0, A.nnz)
    A = A.maximum(A.T).tocsr()
    G = GraphData(np.zeros((80, 1)), A)
    S = sym_normalized_adjacency(G)
    assert sym_normalized_adjacency(G.with_features(np.ones((80, 3)))) is S
    assert sym_normalized_adjacency(GraphData(np.ones((80, 2)), G.adjacency)) is S
    # the former values, entry for entry
    A64 = sp.csr_matrix(G.adjacency, dtype=np.float64)
    d = np.asarray(A64.sum(axis=1)).ravel() ** -0.5
    R = sp.csr_matrix(sp.diags(d) @ A64 @ sp.diags(d))
    R.sort_indices()
    np.testing.assert_array_equal(S.indptr, R.indptr)
    np.testing.assert_array_equal(S.indices, R.indices)
    np.testing.assert_array_equal(S.data, R.data)
