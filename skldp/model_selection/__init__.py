"""Splitters for graphs."""

from ._edge_splits import PairData, random_edge_split, sample_non_edges
from ._node_splits import (
    LabelledKFold,
    per_class_node_split,
    planetoid_split,
    random_node_split,
)

__all__ = ["PairData", "random_edge_split", "sample_non_edges",
           "LabelledKFold", "per_class_node_split", "planetoid_split", "random_node_split"]
