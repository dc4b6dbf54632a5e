"""Every torch path creates its tensors on the estimator's device, whatever torch's default.

No GPU runs in CI, so a tensor created without ``device=`` would go unnoticed until
the first CUDA run, where it meets the model's CUDA tensors and fails. The fixture
``under_meta`` sets torch's default device to "meta" (tensors without data) while the
estimators run on the CPU: such a tensor lands on "meta" and fails as soon as it meets
a CPU tensor or is read. The results must equal those of a run with the usual default.
The GNN classifiers have the same test in ``tests/models/test_base.py``.
"""

import numpy as np
import pytest
import torch

from skldp import GraphData
from skldp.central import DPGNNClassifier
from skldp.model_selection import random_edge_split
from skldp.models import HadamardLinkPredictor, LPGNNClassifier, MLPHead, VGAELinkPredictor
from skldp.propagation import PPRPropagation

ESTIMATORS = {
    # with private labels: the RR transition matrix and the propagated predictions
    "lpgnn, eps_y = 1": lambda: LPGNNClassifier(eps_y=1.0, classes=[0, 1, 2], x_steps=1,
                                                epochs=3, device="cpu", random_state=0),
    "mlp": lambda: MLPHead(epochs=3, device="cpu", random_state=0),
    # weight_decay="auto"'s batched search with its dropout draws
    "mlp, hidden": lambda: MLPHead(hidden_layer_sizes=(8,), epochs=3, device="cpu",
                                   random_state=0),
    "dpgnn": lambda: DPGNNClassifier(max_degree=3, batch_size=10, n_steps=5, noise_multiplier=1.0,
                                     classes=[0, 1, 2], hidden_size=8, device="cpu",
                                     random_state=0),
}
LINK_PREDICTORS = {
    "vgae": lambda: VGAELinkPredictor(epochs=3, min_epochs=1, device="cpu", random_state=0),
    "hadamard": lambda: HadamardLinkPredictor(epochs=3, batch_size=64, device="cpu",
                                              random_state=0),
}


def test_meta_default_catches_a_tensor_without_device(under_meta):
    """The guard itself: a CPU tensor meeting one created without ``device=`` fails."""
    x = torch.ones(3, device="cpu")
    with pytest.raises((RuntimeError, NotImplementedError)):
        under_meta(lambda: (x + torch.ones(3)).numpy())


@pytest.mark.parametrize("name", ESTIMATORS)
def test_node_estimators_ignore_the_default_device(binary_sbm, name, under_meta):
    G, y = binary_sbm(n=90)
    tr = np.arange(0, len(y), 2)

    def run():
        return ESTIMATORS[name]().fit(G[tr], y[tr]).predict_proba(G)
    np.testing.assert_array_equal(under_meta(run), run())


@pytest.mark.parametrize("name", LINK_PREDICTORS)
def test_link_predictors_ignore_the_default_device(binary_sbm, name, under_meta):
    G, _ = binary_sbm(n=90)
    P_tr, _, P_te, y_tr, _, _ = random_edge_split(G, val_size=0.1, test_size=0.2,
                                                  random_state=0)

    def run():
        return LINK_PREDICTORS[name]().fit(P_tr, y_tr).decision_function(P_te)
    np.testing.assert_array_equal(under_meta(run), run())


def test_torch_propagation_ignores_the_default_device(binary_sbm, under_meta):
    G, _ = binary_sbm(n=90)
    G = GraphData(G.features, G.adjacency)

    def run():
        return PPRPropagation(backend="torch", device="cpu").fit_transform(G).features
    np.testing.assert_array_equal(under_meta(run), run())
