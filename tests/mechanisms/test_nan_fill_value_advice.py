"""A mechanism refusing NaN features suggests an on-device imputer whose fill value lies
inside its public feature_range: fill_value=0.0 was suggested for ages in [18, 90], and
every imputed row was then clipped, with a warning."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline

from skldp import GraphData, NodeWise
from skldp.mechanisms import LaplaceMechanism, MultiBitMechanism, PiecewiseMechanism


def _graph():
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(20, 30, 20), rng.integers(40, 90, 20)].astype(float)   # in range
    X[3, 1] = np.nan
    return GraphData(X, sp.eye(20, format="csr"), node_ids=[f"u{i}" for i in range(20)])


def _advised_imputer(err):
    text = str(err)
    fill = float(text.split("fill_value=")[1].split(")")[0])
    return NodeWise(SimpleImputer(strategy="constant", fill_value=fill), on_device=True), fill


@pytest.mark.parametrize("Mech", [PiecewiseMechanism, LaplaceMechanism, MultiBitMechanism])
@pytest.mark.parametrize("feature_range, fill", [
    ((18, 90), 18.0),
    (([0, 18], [30, 90]), 18.0),   # in both columns' ranges
    (([0, 40], [30, 90]), 40.0),   # none is: the NaN's column's lower bound
])
def test_the_suggested_fill_value_is_inside_feature_range(Mech, feature_range, fill):
    G = _graph()
    mech = Mech(eps=1.0, feature_range=feature_range, random_state=0)
    with pytest.raises(ValueError, match="row 3, column 1") as info:
        mech.fit(G)
    imputer, got = _advised_imputer(info.value)
    assert got == fill
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no clip warning: the filled value is in range
        Pipeline([("imp", imputer), ("m", mech)]).fit_transform(G)


def test_the_suggested_fill_value_on_a_plain_array_at_transform():
    X = _graph().features
    clean = np.nan_to_num(X, nan=50.0)
    mech = PiecewiseMechanism(eps=1.0, feature_range=(18, 90), random_state=0).fit(clean)
    with pytest.raises(ValueError, match=r"fill_value=18\.0\).*18\.0 lies in every"):
        mech.transform(X)


def test_without_a_public_range_the_fill_value_stays_0():
    with pytest.raises(ValueError, match=r"fill_value=0\.0\)") as info:
        PiecewiseMechanism(eps=1.0, feature_range=None).fit(_graph())
    assert "lies in every" not in str(info.value)


def test_the_advice_for_sparse_features_and_for_infinities_works():
    # Before: the advised imputer kept no column of sparse rows (the on-device check then
    # refused it), and an infinity got an imputer's advice, which fails on it.
    import re
    import warnings

    import scipy.sparse as sp

    from skldp import GraphData, NodeWise  # noqa: F401 - used by eval
    from skldp.mechanisms import OneBitMechanism
    X = np.random.default_rng(0).random((10, 3))
    X[2, 1] = np.nan
    G = GraphData(sp.csr_matrix(X))
    with pytest.raises(ValueError) as err:
        OneBitMechanism(eps=1.0, feature_range=(0, 1)).fit(G)
    advice = re.search(r"NodeWise\(SimpleImputer\(.*?\), on_device=True\)", str(err.value))[0]
    assert "keep_empty_features=True" in advice
    from sklearn.impute import SimpleImputer  # noqa: F401 - used by eval
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = eval(advice).fit(G).transform(G)
    assert np.all(np.isfinite(np.asarray(out.features.toarray())))
    X[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"That one is infinite: an imputer fills missing "
                                         r"values only"):
        OneBitMechanism(eps=1.0, feature_range=(0, 1)).fit(GraphData(X))
