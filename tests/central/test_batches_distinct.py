"""DP-SGD batches are drawn without replacement, of exactly
batch_size distinct nodes (the accountant's sampling; a node drawn twice would add its
clipped gradient twice and double the sensitivity)."""

import numpy as np

import skldp.central._dpgnn as dpgnn
from skldp import GraphData
from skldp.central import DPMLPClassifier


def test_every_batch_is_batch_size_distinct_rows(monkeypatch):
    seen = []
    original = dpgnn._PerNodeGradients.clipped_sum

    def spy(self, idx, C):
        seen.append(np.asarray(idx).copy())
        return original(self, idx, C)

    monkeypatch.setattr(dpgnn._PerNodeGradients, "clipped_sum", spy)
    X = np.random.default_rng(0).uniform(size=(30, 4))
    y = (X[:, 0] > 0.5).astype(int)
    DPMLPClassifier(classes=[0, 1], batch_size=25, n_steps=20, noise_multiplier=1.0,
                    accountant="hypergeometric", random_state=0).fit(GraphData(X), y)
    assert len(seen) == 20
    for idx in seen:
        assert len(idx) == 25 and len(np.unique(idx)) == 25
