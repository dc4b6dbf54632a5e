"""Splitters for graphs."""

from ._node_splits import LabelledKFold, planetoid_split, random_node_split

__all__ = ["LabelledKFold", "planetoid_split", "random_node_split"]
