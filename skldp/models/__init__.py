"""Torch classification heads, GNN classifiers and link predictors."""

from ._base import TorchClassifierBase

__all__ = ["TorchClassifierBase"]
