"""The one trainer's epoch loss: mini-batches weighted by their rows, a large full batch cut
in row chunks that sum to the batch's mean, and a validation split that follows the seed."""

import numpy as np
import pytest

import skldp.models._base as trainer
from skldp import GraphData
from skldp.models import MLPHead


def _data(n=30, d=5):
    rng = np.random.default_rng(0)
    X = rng.random((n, d))
    return GraphData(X), (X[:, 0] + 0.3 * rng.random(n) > 0.6).astype(int)


def _head(**kw):
    return MLPHead((8,), dropout=0.0, weight_decay=0.0, early_stopping=False,
                   random_state=0, device="cpu", **kw)


def test_a_mini_batch_epoch_loss_is_the_mean_over_its_rows():
    # at a learning rate that leaves the weights where they started, an epoch of batches of
    # 7, 7, 7, 7 and 2 rows has the full batch's first loss (the mean over the 30 rows)
    G, y = _data()
    full = _head(lr=1e-12, epochs=1).fit(G, y)
    batches = _head(lr=1e-12, epochs=1, batch_size=7).fit(G, y)
    assert batches.loss_curve_[0] == pytest.approx(full.loss_curve_[0], rel=1e-5)


def test_a_full_batch_in_row_chunks_is_the_same_mean(monkeypatch):
    G, y = _data()
    whole = _head(lr=0.01, epochs=4).fit(G, y)
    monkeypatch.setattr(MLPHead, "_batch_chunk_rows", lambda self, n: 8)   # 8, 8, 8, 6
    chunked = _head(lr=0.01, epochs=4).fit(G, y)
    np.testing.assert_allclose(chunked.loss_curve_, whole.loss_curve_, rtol=1e-5)
    np.testing.assert_allclose(chunked.predict_proba(G), whole.predict_proba(G), atol=1e-5)


def test_the_validation_split_follows_the_random_state(monkeypatch):
    held = []
    split = trainer.validation_split

    def spy(*args, **kwargs):
        local, val = split(*args, **kwargs)
        held.append(sorted(np.asarray(val).tolist()))
        return local, val

    monkeypatch.setattr(trainer, "validation_split", spy)
    G, y = _data(60)
    for seed in (0, 1, 0):
        MLPHead(epochs=2, weight_decay=0.0, early_stopping=True, random_state=seed,
                device="cpu").fit(G, y)
    assert len(held) == 3
    assert held[0] == held[2] and held[0] != held[1] and len(held[0]) == len(held[1]) > 0
