"""Torch classification heads, GNN classifiers and link predictors."""

from ._base import TorchClassifierBase
from ._gnn import GATClassifier, GCNClassifier, GNNClassifierBase, SAGEClassifier
from ._link import HadamardLinkPredictor, PairData, VGAELinkPredictor
from ._lpgnn import LPGNNClassifier
from ._mlp import MLPHead
from ._rgnn import RGNNClassifier
from ._solitude import SolitudeClassifier

__all__ = ["HadamardLinkPredictor", "PairData", "VGAELinkPredictor",
           "GATClassifier", "GCNClassifier", "GNNClassifierBase", "LPGNNClassifier",
           "MLPHead", "SAGEClassifier",
           "TorchClassifierBase", "RGNNClassifier",
           "SolitudeClassifier"]
