"""Every public estimator declares its parameters' types and ranges (scikit-learn's way).

Each estimator of the public modules has ``_parameter_constraints`` covering every
``get_params()`` key, and its ``fit`` checks them first (``sklearn.base._fit_context``):
an out-of-range value of a numeric parameter raises scikit-learn's
``InvalidParameterError`` naming the parameter and the estimator, before any data is
read.
"""

import importlib
import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import (
    Interval,
    generate_invalid_param_val,
    make_constraint,
)

from skldp import GraphData, InvalidParameterError
from skldp.baselines import LabelPropagationClassifier, StructuralFeatures

PUBLIC_MODULES = [
    "skldp", "skldp.mechanisms", "skldp.propagation", "skldp.reconstruction", "skldp.models",
    "skldp.central", "skldp.baselines", "skldp.accounting", "skldp.model_selection",
    "skldp.datasets", "skldp.metrics", "skldp.privacy", "skldp.audit", "skldp.device",
    "skldp.population",
]
# Bases that users subclass, not estimators to fit (their __init__ takes *args).
BASES = {"LDPMechanism", "TorchClassifierBase", "GNNClassifierBase"}
# Estimators whose constructor needs an argument.
REQUIRED = {
    "NodeWise": lambda cls: cls(StandardScaler()),
    "CorrectAndSmooth": lambda cls: cls(LabelPropagationClassifier()),
    "GraphFeatureUnion": lambda cls: cls([("s", StructuralFeatures(n_components=2))]),
}


def _public_estimators():
    seen = {}
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if (inspect.isclass(obj) and issubclass(obj, BaseEstimator)
                    and obj.__name__ not in BASES):
                seen[obj.__name__] = obj
    return [seen[k] for k in sorted(seen)]


ESTIMATORS = _public_estimators()


def _make(cls):
    return REQUIRED.get(cls.__name__, lambda c: c())(cls)


def _out_of_range_params():
    """(estimator class, parameter, value outside every constraint of the parameter)."""
    cases = []
    for cls in ESTIMATORS:
        for name, constraints in cls._parameter_constraints.items():
            if name not in _make(cls).get_params(deep=False):
                continue
            parsed = [make_constraint(c) for c in constraints] if constraints != \
                "no_validation" else []
            for c in parsed:
                if isinstance(c, Interval):
                    bad = generate_invalid_param_val(c)
                    if not any(p.is_satisfied_by(bad) for p in parsed):
                        cases.append(pytest.param(cls, name, bad,
                                                  id=f"{cls.__name__}-{name}={bad!r}"))
                    break
    return cases


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(0)
    A = sp.random(12, 12, density=0.3, random_state=0)
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    return GraphData(rng.random((12, 3)), sp.csr_matrix(A)), np.arange(12) % 2


def test_the_listing_finds_the_estimators():
    names = {cls.__name__ for cls in ESTIMATORS}
    assert {"HDSMechanism", "PPRPropagation", "GCNClassifier", "DPGNNClassifier",
            "CorrectAndSmooth", "EdgeRR", "LabelRandomizedResponse"} <= names
    assert len(names) >= 30


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_constraints_cover_every_parameter(cls):
    params = set(_make(cls).get_params(deep=False))
    declared = set(getattr(cls, "_parameter_constraints", {}))
    missing = params - declared
    assert not missing, f"{cls.__name__} declares no constraint for {sorted(missing)}"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_set_up_hook_does_not_override_sklearns_validate_params(cls):
    # _validate_params is scikit-learn's check of the declared constraints; skldp's own
    # fit-time set-up is _setup_fit.
    assert cls._validate_params is BaseEstimator._validate_params


OUT_OF_RANGE = _out_of_range_params()


def test_out_of_range_cases_cover_the_estimators():
    covered = {p.values[0].__name__ for p in OUT_OF_RANGE}
    assert len(OUT_OF_RANGE) >= 100
    # every estimator with a numeric parameter is exercised
    assert {"HDSMechanism", "PPRPropagation", "MLPHead", "GCNClassifier", "DPMLPClassifier",
            "VGAELinkPredictor", "StructuralFeatures", "KProp"} <= covered


@pytest.mark.parametrize("cls, name, bad", OUT_OF_RANGE)
def test_out_of_range_value_raises_at_fit_naming_the_parameter(cls, name, bad, graph):
    G, y = graph
    est = _make(cls).set_params(**{name: bad})
    with pytest.raises(InvalidParameterError,
                       match=rf"The '{name}' parameter of {cls.__name__} must be .* Got "):
        est.fit(G, y)


@pytest.mark.parametrize("value", [True, 2.0, "3"])
def test_counts_refuse_booleans_and_non_integers(value, graph):
    from skldp.propagation import KProp
    G, _ = graph
    with pytest.raises(InvalidParameterError, match="The 'steps' parameter of KProp"):
        KProp(steps=value).fit(G)


def test_eps_accepts_inf_and_refuses_zero_nan_and_booleans(graph):
    from skldp.mechanisms import HDSMechanism
    G, _ = graph
    HDSMechanism(eps=np.inf, feature_range=(0, 1), random_state=0).fit(G)
    for bad in (0, -1.0, np.nan, True):
        with pytest.raises(InvalidParameterError,
                           match=r"The 'eps' parameter of HDSMechanism must be a float in "
                                 r"the range \(0.0, inf\]"):
            HDSMechanism(eps=bad, feature_range=(0, 1)).fit(G)


def test_a_collection_refuses_a_non_positive_budget_even_without_the_declared_checks(graph):
    # scikit-learn's skip_parameter_validation skips the declared constraints; the
    # ledger still refuses to record a report that costs eps <= 0.
    from sklearn import config_context

    from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse
    G, y = graph
    with config_context(skip_parameter_validation=True):
        for bad in (0.0, -1.0):
            with pytest.raises(InvalidParameterError, match="budget of a report must be > 0"):
                HDSMechanism(eps=bad, feature_range=(0, 1)).fit(G)
        for bad in (0.0, -1.0, np.nan):
            with pytest.raises(InvalidParameterError, match="budget of a report must be > 0"):
                LabelRandomizedResponse(eps=bad, classes=[0, 1]).fit(G, y)
