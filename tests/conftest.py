"""Test configuration: real datasets come from ../shared/datasets unless set otherwise."""

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

_SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
if "SKLDP_DATASETS_DIR" not in os.environ and _SHARED.is_dir():
    os.environ["SKLDP_DATASETS_DIR"] = str(_SHARED)

torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture
def small_graph():
    """A 2-block stochastic block model with informative features (60 nodes)."""
    rng = np.random.default_rng(0)
    n, d = 60, 5
    y = np.repeat([0, 1], n // 2)
    P = np.where(y[:, None] == y[None, :], 0.3, 0.02)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = (A | A.T).astype(float)
    X = rng.normal(size=(n, d)) * 0.3 + y[:, None]
    X = np.clip(X, -1, 2)
    return sp.csr_array(A), X, y
