"""Splitters for graphs."""

from ._edge_splits import PairData, random_edge_split, sample_non_edges
from ._node_splits import LabelledKFold, planetoid_split, random_node_split

__all__ = ["PairData", "random_edge_split", "sample_non_edges",
           "LabelledKFold", "planetoid_split", "random_node_split"]
