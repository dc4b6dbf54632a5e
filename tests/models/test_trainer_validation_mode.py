"""The trainer's validation pass scores the model in evaluation mode (no dropout)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.models import GCNClassifier, LPGNNClassifier, RGNNClassifier, SAGEClassifier

KW = dict(dropout=0.5, epochs=1, patience=None, random_state=0, device="cpu")

MODELS = {
    "gcn": lambda val: GCNClassifier(validation=val, **KW),
    "sage": lambda val: SAGEClassifier(validation=val, **KW),
    "lpgnn": lambda val: LPGNNClassifier(eps_y=np.inf, classes=[0, 1, 2], x_steps=1, y_steps=0,
                                         selection="loss", validation=val, **KW),
    # soft targets: the reported labels one-hot (eps_y=inf: the true ones)
    "rgnn": lambda val: RGNNClassifier(eps_y=np.inf, classes=[0, 1, 2], alpha=0.0,
                                       reconstruct_labels=False, validation=val, **KW),
}


@pytest.mark.parametrize("name", MODELS)
def test_first_validation_loss_is_the_fitted_model_s_loss(name):
    # After one epoch the kept weights are that epoch's (best_epoch_ 0): its validation
    # score is the cross entropy of the fitted model's probabilities on the validation
    # rows, which predict_proba computes without dropout.
    rng = np.random.default_rng(0)
    n = 24
    y = np.arange(n) % 3
    P = np.where(y[:, None] == y[None, :], 0.5, 0.05)
    A = np.triu(rng.random((n, n)) < P, 1)
    G = GraphData(rng.random((n, 6)) + np.eye(3)[y] @ rng.random((3, 6)),
                  sp.csr_array((A | A.T).astype(float)))
    val = np.arange(1, n, 4)
    clf = MODELS[name](val).fit(G, y)
    assert clf.best_epoch_ == 0 and len(clf.validation_scores_) == 1
    proba = clf.predict_proba(G[val])
    expected = -np.mean(np.log(proba[np.arange(len(val)), y[val]]))
    assert clf.validation_scores_[0] == pytest.approx(expected, rel=1e-5)
