"""check_int: one integer check for every count-like hyper-parameter."""

import numpy as np
import pytest

from skldp import GraphData
from skldp.exceptions import InvalidParameterError
from skldp.mechanisms import GRRFSMechanism
from skldp.models import GCNClassifier, HadamardLinkPredictor
from skldp.propagation import FeatureSmoothing, KProp
from skldp.utils.validation import check_int


def test_accepts_python_and_numpy_integers():
    assert check_int(3, "k", 1) == 3
    out = check_int(np.int64(3), "k", 1, 5)
    assert out == 3 and type(out) is int
    assert check_int(None, "k", 1, allow_none=True) is None


@pytest.mark.parametrize("value", [True, False, 1.0, 2.5, "3", None, np.float64(2)])
def test_refuses_non_integers_and_booleans(value):
    with pytest.raises(InvalidParameterError, match=r"k must be an integer >= 0, got"):
        check_int(value, "k")


@pytest.mark.parametrize("value", [0, 6, -1])
def test_refuses_out_of_range_and_names_the_maximum(value):
    with pytest.raises(InvalidParameterError,
                       match=r"k must be an integer in 1\.\.5 \(the number of features\)"):
        check_int(value, "k", 1, 5, maximum_is="the number of features")


def test_error_is_both_value_and_type_error():
    # Callers and older tests may catch either, as with scikit-learn's InvalidParameterError.
    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(InvalidParameterError, TypeError)


@pytest.mark.parametrize("make", [
    lambda: GCNClassifier(epochs=True),
    lambda: GCNClassifier(n_layers=True),
    lambda: HadamardLinkPredictor(batch_size=True),
    lambda: KProp(steps=True),
    lambda: FeatureSmoothing(steps=2.0),
])
def test_estimators_refuse_booleans_and_floats_as_counts(make, small_graph):
    # A boolean passed as a count used to be accepted by some estimators (True == 1).
    A, X, y = small_graph
    est = make()
    with pytest.raises(InvalidParameterError):
        if isinstance(est, HadamardLinkPredictor):
            est._validate_params()
        elif isinstance(est, GCNClassifier):
            est.fit(GraphData(X, A), y)
        else:
            est.fit(GraphData(X, A))


def test_mechanism_names_the_feature_count():
    X = np.zeros((4, 2))
    with pytest.raises(InvalidParameterError,
                       match=r"m must be an integer in 1\.\.2 \(n_features=2\), got 3"):
        GRRFSMechanism(eps=1.0, m=3, domain_sizes=2).fit(X)
