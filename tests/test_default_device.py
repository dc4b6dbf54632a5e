"""Every torch path creates its tensors on the estimator's device, whatever torch's default.

No GPU runs in CI, so a tensor created without ``device=`` would go unnoticed until
the first CUDA run, where it meets the model's CUDA tensors and fails. Here torch's
default device is set to "meta" (tensors without data) while the estimators run on
the CPU: a tensor created without an explicit device lands on "meta" and fails as
soon as it meets a CPU tensor or is read. The results must equal those of a run
with the usual default.
"""

import numpy as np
import pytest
import torch

from skldp import GraphData
from skldp.central import DPGNNClassifier
from skldp.model_selection import random_edge_split
from skldp.models import (
    GATClassifier,
    GCNClassifier,
    HadamardLinkPredictor,
    LPGNNClassifier,
    MLPHead,
    RGNNClassifier,
    SAGEClassifier,
    SolitudeClassifier,
    VGAELinkPredictor,
)
from skldp.propagation import PPRPropagation

KW = dict(epochs=3, device="cpu", random_state=0)
NODE_ESTIMATORS = {
    "gcn": lambda: GCNClassifier(**KW),
    "sage": lambda: SAGEClassifier(**KW),
    "gat": lambda: GATClassifier(heads=2, **KW),
    "lpgnn": lambda: LPGNNClassifier(eps_y=1.0, classes=[0, 1, 2], x_steps=1, **KW),
    "rgnn": lambda: RGNNClassifier(eps_y=1.0, classes=[0, 1, 2], n_clusters=4, **KW),
    "solitude": lambda: SolitudeClassifier(**KW),
    "mlp": lambda: MLPHead(**KW),
    "dpgnn": lambda: DPGNNClassifier(max_degree=3, batch_size=10, n_steps=5, noise_multiplier=1.0,
                                     classes=[0, 1, 2], hidden_size=8, device="cpu",
                                     random_state=0),
}
LINK_ESTIMATORS = {
    "vgae": lambda: VGAELinkPredictor(epochs=3, min_epochs=1, **{k: KW[k] for k in
                                                                  ("device", "random_state")}),
    "hadamard": lambda: HadamardLinkPredictor(epochs=3, batch_size=64, device="cpu",
                                              random_state=0),
}


def _under_meta(fn):
    torch.set_default_device("meta")
    try:
        return fn()
    finally:
        torch.set_default_device(None)


def test_meta_default_catches_a_tensor_without_device():
    """The guard itself: a CPU tensor meeting one created without ``device=`` fails."""
    x = torch.ones(3, device="cpu")
    with pytest.raises((RuntimeError, NotImplementedError)):
        _under_meta(lambda: (x + torch.ones(3)).numpy())


@pytest.mark.parametrize("name", NODE_ESTIMATORS)
def test_node_estimators_ignore_the_default_device(binary_sbm, name):
    G, y = binary_sbm(n=90)
    tr = np.arange(0, len(y), 2)

    def run():
        return NODE_ESTIMATORS[name]().fit(G[tr], y[tr]).predict_proba(G)
    np.testing.assert_array_equal(_under_meta(run), run())


@pytest.mark.parametrize("name", LINK_ESTIMATORS)
def test_link_predictors_ignore_the_default_device(binary_sbm, name):
    G, _ = binary_sbm(n=90)
    P_tr, _, P_te, y_tr, _, _ = random_edge_split(G, val_size=0.1, test_size=0.2,
                                                  random_state=0)

    def run():
        return LINK_ESTIMATORS[name]().fit(P_tr, y_tr).decision_function(P_te)
    np.testing.assert_array_equal(_under_meta(run), run())


def test_torch_propagation_ignores_the_default_device(binary_sbm):
    G, _ = binary_sbm(n=90)
    G = GraphData(G.features, G.adjacency)

    def run():
        return PPRPropagation(backend="torch", device="cpu").fit_transform(G).features
    np.testing.assert_array_equal(_under_meta(run), run())
