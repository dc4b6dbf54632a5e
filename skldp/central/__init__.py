"""Node-level central DP training of GNNs (DP-SGD / DP-Adam)."""

__all__ = []
