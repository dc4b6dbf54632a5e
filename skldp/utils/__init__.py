"""Shared utilities: validation, deterministic per-node randomness and thread pools."""

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
from ._threads import (
    available_cpus,
    passive_waiting,
    share_cpus,
    size_thread_pools,
    thread_share,
)

__all__ = ["array_fingerprint", "collection_seed", "draw_seed", "node_normals", "node_uniforms",
           "node_uniforms_fine", "node_uniforms_ragged", "sample_k_of_d", "available_cpus",
           "thread_share", "size_thread_pools", "share_cpus", "passive_waiting"]
