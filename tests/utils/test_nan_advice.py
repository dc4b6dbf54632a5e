"""Where NaN features are refused, the advice fits the step: on-device imputation before
a local DP mechanism, an imputer in front of a server-side model otherwise."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.baselines import CorrectAndSmooth
from skldp.central import DPGNNClassifier, DPMLPClassifier
from skldp.mechanisms import HDSMechanism
from skldp.models import MLPHead

DEVICE_ADVICE = "on each user's device with a public, stateless step"


def _graph_with_a_nan(n=30):
    rng = np.random.default_rng(0)
    X = rng.random((n, 4))
    X[3, 2] = np.nan
    ring = np.arange(n)
    A = sp.csr_matrix((np.ones(n), (ring, (ring + 1) % n)), shape=(n, n))
    return GraphData(X, (A + A.T).tocsr()), np.arange(n) % 2


@pytest.mark.parametrize("make", [
    lambda: MLPHead(epochs=1, random_state=0),
    lambda: DPMLPClassifier(n_steps=1, batch_size=4, random_state=0),
    lambda: DPGNNClassifier(n_steps=1, batch_size=4, random_state=0),
    lambda: CorrectAndSmooth(MLPHead(epochs=1, random_state=0)),
], ids=["MLPHead", "DPMLPClassifier", "DPGNNClassifier", "CorrectAndSmooth"])
def test_a_model_advises_an_imputer_before_it_not_the_device(make):
    G, y = _graph_with_a_nan()
    with pytest.raises(ValueError, match=r"contain NaN or infinite values \(first at row 3, "
                                         r"column 2\)\. Impute them before this step") as err:
        make().fit(G, y)
    assert "the features given to" in str(err.value)
    assert "before a local DP mechanism, on each user's device" not in str(err.value)


def test_a_mechanism_still_advises_the_device():
    G, _ = _graph_with_a_nan()
    with pytest.raises(ValueError, match=DEVICE_ADVICE):
        HDSMechanism(1.0, feature_range=(0, 1), random_state=0).fit(G)
