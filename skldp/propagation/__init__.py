"""Graph aggregation, propagation and denoising transformers."""

from ._gcn_aggregation import GCNAggregation
from ._kprop import KProp
from ._ppr import PPRPropagation
from ._smoothing import FeatureSmoothing, smooth_features, smooth_labels

__all__ = ["GCNAggregation", "KProp", "PPRPropagation",
           "FeatureSmoothing", "smooth_features", "smooth_labels"]
