"""Graph aggregation, propagation and denoising transformers."""

__all__ = []
