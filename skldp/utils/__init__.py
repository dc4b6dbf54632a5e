"""Shared utilities: validation and deterministic per-node randomness."""

from ._random import draw_seed, node_normals, node_uniforms, node_uniforms_ragged, sample_k_of_d

__all__ = ["draw_seed", "node_normals", "node_uniforms", "node_uniforms_ragged",
           "sample_k_of_d"]
