"""A noise multiplier (or threshold) the noise grid cannot hold is refused before any charge."""

import math
import warnings

import numpy as np
import pytest

from skldp import GraphData
from skldp.central import DPGNNClassifier, DPMLPClassifier

KW = dict(batch_size=10, n_steps=2, hidden_size=4, random_state=0, classes=[0, 1])


@pytest.mark.parametrize("Est", [DPGNNClassifier, DPMLPClassifier])
@pytest.mark.parametrize("z", [1e-308, 1e-318, 5e-324])
def test_a_noise_multiplier_too_small_for_the_grid_is_refused_before_the_charge(
        small_graph, Est, z):
    # the grid step (2**-20 of the noise) underflowed: sigma / step raised a bare
    # ZeroDivisionError, or the sums in grid units overflowed and the fit ended in
    # "Training diverged ... use a smaller noise_multiplier", both after the charge
    A, X, y = small_graph
    G = GraphData(X, A)
    tr = np.arange(0, 60, 2)
    kw = dict(KW, noise_multiplier=z)
    kw.update(dict(accountant="hypergeometric") if Est is DPMLPClassifier
              else dict(max_degree=2))
    est = Est(**kw)
    with pytest.raises(ValueError, match=r"noise_multiplier=.* too small for the noise grid"):
        est.fit(G[tr], y[tr])
    assert G.ledger.central_epsilon == 0.0 and not hasattr(est, "collection_")


def test_a_threshold_too_large_for_the_grid_is_refused_before_the_charge(small_graph):
    # noise_multiplier * max_grad_norm overflowed to inf: math.floor raised OverflowError
    A, X, y = small_graph
    G = GraphData(X, A)
    tr = np.arange(0, 60, 2)
    est = DPGNNClassifier(max_degree=2, max_grad_norm=1e308, **KW)
    with pytest.raises(ValueError, match=r"max_grad_norm=.* too large for the noise grid"):
        est.fit(G[tr], y[tr])
    assert G.ledger.central_epsilon == 0.0


@pytest.mark.parametrize("z", [1e-12, 1e-300])
def test_tiny_noise_the_grid_holds_still_trains(small_graph, z):
    A, X, y = small_graph
    G = GraphData(X, A)
    tr = np.arange(0, 60, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = DPGNNClassifier(max_degree=2, noise_multiplier=z, **KW).fit(G[tr], y[tr])
    assert clf.noise_multiplier_ == z and clf.epsilon_ > 1e20
    assert all(s > 0 for s in clf.grid_step_.values())
    assert all(math.isfinite(p) for p in clf.predict_proba(G[tr]).ravel())
