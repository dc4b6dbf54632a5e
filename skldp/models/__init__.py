"""Torch classification heads, GNN classifiers and link predictors."""

from ._base import TorchClassifierBase
from ._mlp import MLPHead
from ._gnn import GATClassifier, GCNClassifier, GNNClassifierBase, SAGEClassifier

__all__ = ["GATClassifier", "GCNClassifier", "GNNClassifierBase", "MLPHead", "SAGEClassifier",
           "TorchClassifierBase"]
