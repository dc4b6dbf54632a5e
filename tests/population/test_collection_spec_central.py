"""collection_spec refuses a central-DP step (devices answer local collections only), fitted
or not (a fitted one failed with "fit() missing X and y")."""

import numpy as np
import pytest

from skldp import GraphData
from skldp.central import DPMLPClassifier
from skldp.population import collection_spec


def test_collection_spec_of_a_central_training_is_refused():
    X = np.random.default_rng(0).uniform(size=(60, 4))
    y = (X[:, 0] > 0.5).astype(int)
    clf = DPMLPClassifier(classes=[0, 1], batch_size=20, n_steps=5, noise_multiplier=2.0,
                          accountant="hypergeometric", random_state=None).fit(GraphData(X), y)
    assert clf.collection_.model == "central"
    for step in (clf, DPMLPClassifier(classes=[0, 1]), DPMLPClassifier(random_state=0)):
        with pytest.raises(ValueError, match="central-DP step"):
            collection_spec(step)
