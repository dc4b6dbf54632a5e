"""MLPHead(weight_decay="auto")'s search as one batched training: the same scores as the
sequential GridSearchCV, which remains where the fits cannot be batched."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from skldp.models import MLPHead, _mlp, _mlp_search


def _rows(n=63, d=20, seed=0):
    """Three noisy classes; 63 rows: folds of unequal sizes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) + 0.4 * np.eye(3)[y] @ rng.normal(size=(3, d))
    return X.astype(np.float32), y


@pytest.fixture
def searches(monkeypatch):
    """The sequential searches run (GridSearchCV.fit calls)."""
    seen = []
    fit = GridSearchCV.fit

    def spy(self, X, y=None, **kw):
        seen.append(self.cv.get_n_splits())
        return fit(self, X, y, **kw)

    monkeypatch.setattr(GridSearchCV, "fit", spy)
    return seen


@pytest.mark.parametrize("hidden, dropout, norm", [((), 0.5, "l2"),
                                                   ((8,), 0.5, "standardize"),
                                                   ((4, 4), 0.3, None)])
def test_batched_scores_are_the_sequential_search_scores(hidden, dropout, norm):
    # each candidate starts from the sequential fit's weights, draws its dropout masks
    # and normalises its fold as that fit does: the same held-out accuracies
    X, y = _rows()
    est = MLPHead(hidden_layer_sizes=hidden, dropout=dropout, normalization=norm, epochs=15,
                  weight_decay=5e-5, random_state=3)
    cv = StratifiedKFold(5, shuffle=True, random_state=7)
    scores = _mlp_search.batched_decay_scores(clone(est), X, y, list(cv.split(X, y)),
                                              _mlp._AUTO_DECAYS)
    grid = GridSearchCV(est, {"weight_decay": list(_mlp._AUTO_DECAYS)}, cv=cv,
                        refit=False).fit(X, y)
    assert len(set(scores)) > 1   # the decays differ: a comparison that could fail
    np.testing.assert_array_equal(scores, grid.cv_results_["mean_test_score"])


def test_fit_chooses_the_sequential_decay_without_a_sequential_search(searches, monkeypatch):
    X, y = _rows(n=90, seed=1)
    cases = [((), 0), ((8,), 1)]
    batched = [MLPHead(hidden_layer_sizes=h, epochs=20, random_state=s).fit(X, y)
               for h, s in cases]
    sparse = MLPHead(epochs=20, random_state=0).fit(sp.csr_matrix(X), y)
    assert searches == []
    monkeypatch.setattr(_mlp, "batched_decay_scores", lambda *a: None)
    sequential = [MLPHead(hidden_layer_sizes=h, epochs=20, random_state=s).fit(X, y)
                  for h, s in cases]
    assert searches == [5, 5]
    assert ([h.weight_decay_ for h in batched] == [h.weight_decay_ for h in sequential])
    assert sparse.weight_decay_ == batched[0].weight_decay_


class _Head(MLPHead):
    pass


@pytest.mark.parametrize("params", [dict(batch_size=16), dict(early_stopping=True),
                                    dict(subclass=True), dict(memory=0),
                                    dict(hidden_layer_sizes=(128,), device="cpu")])
def test_fits_that_cannot_be_batched_run_in_turn(params, searches, monkeypatch):
    X, y = _rows()
    if params.pop("memory", None) == 0:
        monkeypatch.setattr(_mlp_search, "_BATCH_BYTES", 0)
    cls = _Head if params.pop("subclass", False) else MLPHead
    head = cls(epochs=3, random_state=0, **params).fit(X, y)
    assert searches == [5] and head.weight_decay_ in _mlp._AUTO_DECAYS


def test_the_memory_bound_counts_the_hidden_activations():
    # 499 rows, 16 features, 8,192 hidden units: 45 candidates' activations take GBs
    # (the weights alone were under the bound: batched at +1.9 GB against +0.2 GB in turn)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(499, 16)).astype(np.float32), rng.integers(0, 2, 499)
    est = MLPHead(hidden_layer_sizes=(8192,), epochs=1, device="cuda", random_state=0)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    assert _mlp_search.batched_decay_scores(est, X, y, list(cv.split(X, y)),
                                            _mlp._AUTO_DECAYS) is None
