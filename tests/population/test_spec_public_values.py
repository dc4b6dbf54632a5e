"""A parameter that a collection spec cannot hold is named, with what to give instead."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

from skldp import GraphData, NodeWise
from skldp.mechanisms import MultiBitMechanism
from skldp.population._spec import public_params


def _pipe(**kw):
    enc = OneHotEncoder(categories=[[0, 1, 2], [0.0]], handle_unknown="ignore",
                        sparse_output=False, **kw)
    return Pipeline([("oh", NodeWise(enc, on_device=True)),
                     ("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0))])


def test_an_on_device_step_with_a_type_parameter_names_it():
    # the message said "type is not a public value ...: <class 'numpy.float64'>", naming
    # neither the parameter (OneHotEncoder's default dtype) nor the fix
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 3, 30), rng.random(30)]
    G = GraphData(X, sp.eye(30, format="csr"), node_ids=[f"u{i}" for i in range(30)])
    with pytest.raises(ValueError, match=r"the parameter dtype=<class 'numpy\.float64'> of "
                                         r"OneHotEncoder.*give it by its name, "
                                         r"dtype='float64'"):
        _pipe().fit_transform(G)
    assert len(G.ledger) == 0
    assert _pipe(dtype="float64").fit_transform(G).shape == (30, 4)   # the advice works


def test_the_innermost_parameter_is_named():
    class Box:
        def __init__(self, inner=None, f=None):
            self.inner, self.f = inner, f

        def get_params(self, deep=False):
            return {"inner": self.inner, "f": self.f}

    with pytest.raises(TypeError, match=r"^the parameter f=<built-in function len> of Box is not a "
                                        r"public value a spec can hold\.$"):
        public_params(Box(inner=Box(f=len)))
