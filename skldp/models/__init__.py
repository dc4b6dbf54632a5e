"""Torch classification heads, GNN classifiers and link predictors."""

import warnings

from ._base import TorchClassifierBase
from ._gnn import GATClassifier, GCNClassifier, GNNClassifierBase, SAGEClassifier
from ._link import HadamardLinkPredictor, VGAELinkPredictor
from ._lpgnn import LPGNNClassifier
from ._mlp import MLPHead
from ._rgnn import RGNNClassifier
from ._solitude import SolitudeClassifier

__all__ = ["HadamardLinkPredictor", "VGAELinkPredictor",
           "GATClassifier", "GCNClassifier", "GNNClassifierBase", "LPGNNClassifier",
           "MLPHead", "SAGEClassifier",
           "TorchClassifierBase", "RGNNClassifier",
           "SolitudeClassifier"]


def __getattr__(name):
    # PairData lives in skldp.model_selection, beside the splits that make it; the old
    # name here is kept for one release.
    if name == "PairData":
        warnings.warn("skldp.models.PairData is deprecated and will be removed in the next "
                      "release; import it from skldp.model_selection.", FutureWarning,
                      stacklevel=2)
        from ..model_selection import PairData
        return PairData
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
