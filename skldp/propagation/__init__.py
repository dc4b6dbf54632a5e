"""Graph aggregation, propagation and denoising transformers."""

from ._gcn_aggregation import GCNAggregation
from ._kprop import KProp
from ._ppr import PPRPropagation

__all__ = ["GCNAggregation", "KProp", "PPRPropagation"]
