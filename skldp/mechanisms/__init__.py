"""Local DP mechanisms for features, labels and edges (one private module per family)."""

__all__ = []
