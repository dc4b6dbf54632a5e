"""FeatureHashing as a scikit-learn transformer: input checks and output names."""

import importlib.util

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.mechanisms import FeatureHashing


def test_feature_hashing_names_its_new_columns():
    X = np.random.default_rng(0).random((10, 6))
    fh = FeatureHashing(4).fit(X)
    names = fh.get_feature_names_out()
    assert list(names) == ["hash0", "hash1", "hash2", "hash3"]
    assert len(names) == fh.transform(X).shape[1]
    # input_features is still checked against the fitted width
    with pytest.raises(ValueError, match="input_features should have length"):
        fh.get_feature_names_out(["a", "b"])
    if importlib.util.find_spec("pandas") is not None:   # optional: set_output's frames
        out = FeatureHashing(4).set_output(transform="pandas").fit_transform(X)
        assert out.shape == (10, 4) and list(out.columns) == list(names)


def test_feature_hashing_renames_a_named_graph():
    X = np.random.default_rng(0).random((10, 6))
    G = GraphData(X, node_ids=np.arange(10), feature_names=[f"f{i}" for i in range(6)])
    H = FeatureHashing(4).fit_transform(G)
    assert H.shape == (10, 4)
    assert list(H.feature_names) == ["hash0", "hash1", "hash2", "hash3"]
    pipe = Pipeline([("hash", FeatureHashing(3))]).fit(G)
    assert list(pipe.get_feature_names_out()) == ["hash0", "hash1", "hash2"]


def test_feature_hashing_refuses_1d_input():
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array instead"):
        FeatureHashing(4).fit_transform(np.arange(5.0))
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array instead"):
        FeatureHashing(4).fit(np.arange(5.0))
