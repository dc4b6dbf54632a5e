"""Features handed to torch: the caller's read-only arrays are read, never shared."""

import warnings

import numpy as np
import torch

from skldp._torch import to_torch_dense


def test_read_only_features_are_copied_without_a_warning():
    # torch warned "The given NumPy array is not writable" (GCN's fit on read-only X)
    for dtype in (np.float32, np.float64):
        X = np.arange(12, dtype=dtype).reshape(3, 4)
        X.flags.writeable = False
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            T = to_torch_dense(X)
        assert T.dtype == torch.float32
        np.testing.assert_array_equal(T.numpy(), X)
        T += 1                              # the tensor is its own memory
        assert X[0, 0] == 0
