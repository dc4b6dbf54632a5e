"""NodeWise on the inputs a scikit-learn transformer takes, and the advice on missing values.

On plain data ``NodeWise`` behaves like the transformer it wraps (a list of rows
included). NaN refused by a mechanism or a graph step comes with an advice that
works there: an on-device constant imputer before a mechanism (a server-fitted
imputer is refused), an imputer in front of a server step.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from skldp import GraphData, NodeWise
from skldp.mechanisms import HDSMechanism, OneBitMechanism
from skldp.propagation import PPRPropagation

ROWS = [[0.0, 1.0], [1.0, 2.0], [3.0, 5.0]]


@pytest.mark.parametrize("on_device", [False, True])
def test_nodewise_takes_a_list_of_rows(on_device):
    # (on the device a public map: a scaler fitted on the users' rows is refused there)
    make = Normalizer if on_device else StandardScaler
    ref = make().fit(np.zeros((1, 2)) if on_device else ROWS)
    nw = NodeWise(make(), on_device=on_device)
    np.testing.assert_allclose(nw.fit_transform(ROWS), ref.transform(ROWS))
    assert nw.n_features_in_ == 2
    np.testing.assert_allclose(nw.fit(ROWS).transform(ROWS[:2]), ref.transform(ROWS[:2]))


def test_nodewise_on_a_list_refuses_what_the_transformer_refuses():
    with pytest.raises(ValueError, match="Expected 2D array"):
        NodeWise(StandardScaler()).fit([1.0, 2.0])


def _graph_with_a_nan():
    rng = np.random.default_rng(0)
    n = 40
    A = np.triu(rng.random((n, n)) < 0.2, 1)
    X = rng.random((n, 4))
    X[3, 2] = np.nan
    return GraphData(X, sp.csr_matrix((A | A.T).astype(float)))


def _mech():
    return HDSMechanism(eps=1.0, feature_range=(0, 1), random_state=0)


def test_a_mechanism_advises_the_on_device_imputer_that_it_accepts():
    G = _graph_with_a_nan()
    with pytest.raises(ValueError, match="row 3, column 2") as err:
        _mech().fit(G)
    advice = 'NodeWise(SimpleImputer(strategy="constant", fill_value=0.0), on_device=True)'
    assert advice in str(err.value)
    # a server-fitted imputer is refused by the mechanism: the advice must not be it
    with pytest.raises(ValueError, match="computed on the server by NodeWise"):
        Pipeline([("imp", NodeWise(SimpleImputer())), ("m", _mech())]).fit(G)
    # following the advice works, and propagation after the mechanism finds no NaN
    pipe = Pipeline([("imp", NodeWise(SimpleImputer(strategy="constant", fill_value=0.0),
                                      on_device=True)),
                     ("m", OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("ppr", PPRPropagation())])
    assert np.all(np.isfinite(np.asarray(pipe.fit_transform(G))))


def test_a_server_step_advises_an_imputer_in_front_of_it():
    G = _graph_with_a_nan()
    with pytest.raises(ValueError, match="PPRPropagation contain NaN") as err:
        PPRPropagation().fit(G)
    msg = str(err.value)
    assert "Impute them before this step, e.g. with NodeWise(SimpleImputer())" in msg
    assert "on_device=True" in msg   # and where to impute in a local DP pipeline
    out = Pipeline([("imp", NodeWise(SimpleImputer())), ("ppr", PPRPropagation())]).fit_transform(G)
    assert np.all(np.isfinite(np.asarray(out)))


def test_an_on_device_step_whose_parameters_no_spec_can_hold_is_refused_at_fit():
    # a FunctionTransformer's function reached the spec only at transform, as a TypeError
    from sklearn.preprocessing import FunctionTransformer

    G = GraphData(np.random.default_rng(0).random((20, 3)))
    with pytest.raises(ValueError, match="NodeWise\\(on_device=True\\).*FunctionTransformer"):
        NodeWise(FunctionTransformer(np.log1p), on_device=True).fit(G)


class _AddOthers(StandardScaler):
    """A transform with plain parameters that mixes rows: each row plus the others' sum."""

    def transform(self, X, copy=None):
        X = np.asarray(X, dtype=float)
        return X + (X.sum(axis=0) - X)


class _Centre(StandardScaler):
    """Batch statistics in transform (each row minus the batch mean)."""

    def transform(self, X, copy=None):
        X = np.asarray(X, dtype=float)
        return X - X.mean(axis=0)


@pytest.mark.parametrize("step", [_AddOthers(), _Centre()], ids=["add-others", "centre"])
def test_an_on_device_step_that_mixes_rows_is_refused_before_anything_is_sent(step):
    # Before: the simulation transformed the whole matrix, so each user's one-bit report
    # carried the target user's value: eps 0.5 printed, audit lower bound 2.87 (8 users).
    X = np.zeros((8, 1))
    X[0] = 1.0
    G = GraphData(X, budget=1.0)
    pipe = Pipeline([("dev", NodeWise(step, on_device=True)),
                     ("bit", OneBitMechanism(eps=0.5, feature_range=(0, 1), random_state=0))])
    with pytest.raises(ValueError, match=r"is not a per-user step: row \d+ transformed alone"):
        pipe.fit_transform(G)
    assert G.ledger.entries() == []


def test_a_per_user_on_device_step_passes_the_check():
    rng = np.random.default_rng(0)
    X = rng.random((50, 3))
    X[rng.random(X.shape) < 0.2] = np.nan
    for Xg in (X, sp.csr_matrix(np.nan_to_num(X))):
        G = GraphData(Xg)
        imputer = SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True)
        out = NodeWise(imputer, on_device=True).fit(G).transform(G)
        assert np.all(np.isfinite(np.asarray(out)))


@pytest.mark.parametrize("step", [
    "OneHotEncoder(handle_unknown='ignore', dtype='float64')", "SimpleImputer(strategy='mean')",
    "MinMaxScaler()", "StandardScaler()", "MaxAbsScaler()", "StandardScaler(with_mean=False)",
    "RobustScaler(with_centering=False)"])
def test_an_on_device_step_whose_fit_reads_its_row_is_refused(step):
    # Before: fitted on a public row of zeros, OneHotEncoder learnt the category 0 only
    # (other categories became all-zero rows), the imputer filled 0, the scaler did nothing.
    from sklearn.impute import SimpleImputer  # noqa: F401 - used by eval
    from sklearn.preprocessing import (  # noqa: F401
        MaxAbsScaler,
        MinMaxScaler,
        OneHotEncoder,
        RobustScaler,
    )
    G = GraphData(np.random.default_rng(0).integers(0, 3, (20, 2)).astype(float))
    with pytest.raises(ValueError, match=r"fitted on public rows of zeros, but its map "
                                         r"depends on those rows"):
        NodeWise(eval(step), on_device=True).fit(G)
    assert G.ledger.entries() == []


def test_public_maps_pass_the_fit_check():
    from sklearn.preprocessing import Binarizer, OneHotEncoder, PolynomialFeatures
    rng = np.random.default_rng(0)
    G = GraphData(rng.integers(0, 3, (20, 2)).astype(float))
    for step in (SimpleImputer(strategy="constant", fill_value=0.0), Normalizer(),
                 Binarizer(), PolynomialFeatures(2),
                 OneHotEncoder(categories=[[0.0, 1.0, 2.0]] * 2, dtype="float64")):
        assert NodeWise(step, on_device=True).fit(G).transform(G).shape[0] == 20
    # sparse rows: a constant imputer fitted on an empty row keeps no column unless told to
    S = GraphData(sp.csr_matrix(rng.random((20, 3))))
    with pytest.raises(ValueError, match="keep_empty_features=True"):
        NodeWise(SimpleImputer(strategy="constant", fill_value=0.0), on_device=True).fit(S)
    out = NodeWise(SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True),
                   on_device=True).fit(S).transform(S)
    assert out.shape == (20, 3)


def test_on_device_steps_whose_state_a_missing_value_or_a_positive_spread_sets_are_refused():
    # Before: fitted only on rows without a missing value, or on signed rows a sparse step
    # refuses, these passed: indicator columns vanished, a quantile map sent every row to 0.
    from sklearn.impute import MissingIndicator
    from sklearn.preprocessing import QuantileTransformer
    rng = np.random.default_rng(0)
    dense = GraphData(rng.random((20, 3)))
    sparse = GraphData(sp.csr_matrix(rng.random((20, 3))))
    for G, step in ((dense, SimpleImputer(strategy="constant", fill_value=0.0,
                                          add_indicator=True)),
                    (dense, MissingIndicator()),   # (features="all" is a public map)
                    (sparse, QuantileTransformer(n_quantiles=5))):
        with pytest.raises(ValueError, match="its map depends on those rows"):
            NodeWise(step, on_device=True).fit(G)


def test_a_step_that_needs_two_rows_to_fit_runs_on_the_device():
    # Before: fitted on one public row of zeros, SplineTransformer (two rows at least) was
    # refused even with public knots.
    from sklearn.base import clone
    from sklearn.preprocessing import SplineTransformer

    X = np.random.default_rng(0).random((20, 2))
    G = GraphData(X)
    knots = np.array([[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]])
    step = SplineTransformer(knots=knots, extrapolation="constant")
    out = NodeWise(step, on_device=True).fit(G).transform(G)
    np.testing.assert_allclose(out, clone(step).fit(X).transform(X))
    # knots taken from the rows fitted on: a state each device would learn from its user
    with pytest.raises(ValueError, match="its map depends on those rows"):
        NodeWise(SplineTransformer(), on_device=True).fit(G)


@pytest.mark.parametrize("on_device", [False, True])
@pytest.mark.parametrize("inner", ["mechanism", "graph step", "in a pipeline"])
def test_nodewise_refuses_a_graph_step_before_reading_anything(inner, on_device):
    # A mechanism (or a step that needs the graph) inside NodeWise gets plain rows: it
    # was refused only after NodeWise had read the users' raw features (charged
    # epsilon=inf), with "fitted on another array" or "needs the graph".
    rng = np.random.default_rng(0)
    A = sp.csr_array(np.triu(rng.random((20, 20)) < 0.3, 1).astype(float))
    G = GraphData(rng.random((20, 3)), A + A.T)
    hds = HDSMechanism(1.0, feature_range=(0, 1), random_state=0)
    step = {"mechanism": hds, "graph step": PPRPropagation(),
            "in a pipeline": Pipeline([("s", Normalizer()), ("h", hds)])}[inner]
    name = "PPRPropagation" if inner == "graph step" else "HDSMechanism"
    with pytest.raises(ValueError, match=f"{name} is a graph step of skldp"):
        NodeWise(step, on_device=on_device).fit(G[:10])
    assert G.ledger.entries() == []
