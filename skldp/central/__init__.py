"""Node-level central DP training of GNNs (DP-SGD / DP-Adam)."""

from ._dpgnn import DPGNNClassifier, DPMLPClassifier
from ._sampling import DegreeBoundedSampler, degree_bounded_sample

__all__ = ["DPGNNClassifier", "DPMLPClassifier", "DegreeBoundedSampler",
           "degree_bounded_sample"]
