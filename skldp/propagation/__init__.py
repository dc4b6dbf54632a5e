"""Graph aggregation, propagation and denoising transformers."""

from ._ppr import PPRPropagation

__all__ = ["PPRPropagation"]
