"""MLPHead(weight_decay="auto"): the folds of its cross-validation, and the fixed value
(with a warning) when a class has a single fit row."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from skldp.models import MLPHead, _mlp


def _rows(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    return rng.normal(size=(n, 6)) + y[:, None], y


@pytest.fixture
def folds(monkeypatch):
    """The number of folds of each weight-decay search (the search itself runs, batched
    or, where it cannot be, sequential)."""
    seen = []
    fit, batched = GridSearchCV.fit, _mlp.batched_decay_scores

    def spy(self, X, y=None, **kw):
        seen.append(self.cv.get_n_splits())
        return fit(self, X, y, **kw)

    def batched_spy(est, X, y, splits, decays):
        scores = batched(est, X, y, splits, decays)
        if scores is not None:
            seen.append(len(splits))
        return scores

    monkeypatch.setattr(GridSearchCV, "fit", spy)
    monkeypatch.setattr(_mlp, "batched_decay_scores", batched_spy)
    return seen


def test_five_folds_or_the_fewest_rows_of_a_class(folds):
    X, y = _rows()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # nothing to warn about
        w5 = MLPHead(epochs=10, random_state=1).fit(X, y).weight_decay_
        y3 = y.copy()
        y3[:3] = 5                                        # a class of three rows
        w3 = MLPHead(epochs=10, random_state=1).fit(X, y3).weight_decay_
    assert folds == [5, 3]
    assert w5 in _mlp._AUTO_DECAYS and w3 in _mlp._AUTO_DECAYS


def test_a_class_of_one_row_keeps_the_default_and_says_so(folds):
    X, y = _rows()
    y1 = y.copy()
    y1[0] = 7                                             # a class of a single row
    with pytest.warns(UserWarning, match=r"class 7 has a single fit row.*5e-05"):
        head = MLPHead(epochs=10, random_state=0).fit(X, y1)
    assert head.weight_decay_ == _mlp._DECAY == 5e-5 and folds == []
    # a number is used as given: no search, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        MLPHead(weight_decay=1e-3, epochs=2).fit(X, y1)
    assert folds == []
