"""The boolean options of the public propagation and reconstruction functions."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.exceptions import InvalidParameterError
from skldp.propagation import smooth_features, smooth_labels
from skldp.reconstruction import (
    grr_transition_matrix,
    mean_propagation_matrix,
    reconstruct_labels,
    unbiased_label_distribution,
)

A = sp.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
T = grr_transition_matrix(1.0, 3)
CALLS = {
    "smooth_features": lambda v: smooth_features(np.eye(3), A, 1, self_loops=v),
    "smooth_labels": lambda v: smooth_labels(np.eye(3), A, 1, self_loops=v),
    "mean_propagation_matrix": lambda v: mean_propagation_matrix(A, self_loops=v),
    "reconstruct_labels self_loops": lambda v: reconstruct_labels(A, [0, 1], [0, 1], T,
                                                                  self_loops=v),
    "reconstruct_labels project": lambda v: reconstruct_labels(A, [0, 1], [0, 1], T,
                                                               project=v),
    "unbiased_label_distribution": lambda v: unbiased_label_distribution([0.2, 0.3, 0.5],
                                                                         T, project=v),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
@pytest.mark.parametrize("value", ["False", "no", None, 0, 1.0, [False]])
def test_flag_that_is_not_a_bool_is_refused(call, value):
    # any value was read by its truth: self_loops="False" (a string from a config file or
    # a command line) added the self loops, None or 0 left them out, silently
    with pytest.raises(InvalidParameterError, match="must be True or False"):
        call(value)


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_flag_bools_accepted(call):
    for value in (True, False, np.True_, np.False_):
        call(value)
