"""Shared utilities: validation and deterministic per-node randomness."""

from ._random import (
    array_fingerprint,
    collection_seed,
    draw_seed,
    node_normals,
    node_uniforms,
    node_uniforms_fine,
    node_uniforms_ragged,
    sample_k_of_d,
)

__all__ = ["array_fingerprint", "collection_seed", "draw_seed", "node_normals", "node_uniforms",
           "node_uniforms_fine", "node_uniforms_ragged", "sample_k_of_d"]
