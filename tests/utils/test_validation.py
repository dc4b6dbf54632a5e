"""check_int: one integer check for every count-like hyper-parameter; clip_to_range."""

import re
import warnings

import numpy as np
import pytest

from skldp import GraphData
from skldp.exceptions import InvalidParameterError
from skldp.mechanisms import GRRFSMechanism
from skldp.models import GCNClassifier, HadamardLinkPredictor
from skldp.propagation import FeatureSmoothing, KProp
from skldp.utils.validation import check_feature_array, check_int, clip_to_range


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


# ------------------------------------------------------------ clip_to_range
def test_clip_to_range_in_range_returns_a_read_only_view():
    X = np.linspace(0, 1, 40).reshape(8, 5)
    lo, hi = np.zeros(5), np.ones(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = clip_to_range(X, lo, hi)
    assert np.shares_memory(out, X) and not out.flags.writeable
    assert X.flags.writeable            # the caller's array is untouched
    out32 = clip_to_range(X.astype(np.float32), lo, hi)
    assert out32.dtype == np.float64 and np.array_equal(out32, X.astype(np.float32))


def test_clip_to_range_can_keep_a_float_dtype():
    X = np.linspace(0, 1, 40, dtype=np.float32).reshape(8, 5)
    lo, hi = np.zeros(5), np.ones(5)
    out = clip_to_range(X, lo, hi, dtype=None)
    assert out.dtype == np.float32 and np.shares_memory(out, X) and not out.flags.writeable
    assert clip_to_range(X.astype(int), lo, hi, dtype=None).dtype == np.float64
    X[0, 0] = 2.0
    with pytest.warns(UserWarning, match="1 feature values lay outside"):
        out = clip_to_range(X, lo, hi, dtype=None)
    assert out[0, 0] == 1.0 and X[0, 0] == 2.0


def test_clip_to_range_clips_and_counts_across_row_blocks(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 1.5, size=(300, 1000))   # blocks of 262 rows
    lo, hi = np.zeros(1000), np.ones(1000)
    n_bad = int(np.count_nonzero((X < 0) | (X > 1)))
    with pytest.warns(UserWarning, match=f"{n_bad} feature values lay outside"):
        out = clip_to_range(X, lo, hi)
    assert np.array_equal(out, np.clip(X, 0, 1)) and not np.shares_memory(out, X)
    assert X.min() < 0                  # the input is not clipped in place


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("sparse", [False, True])
def test_clip_to_range_refuses_nan_and_inf_naming_the_entry(bad, sparse):
    """The range check also reads NaN and inf (no finiteness pass of its own): refused,
    never clipped into range."""
    import scipy.sparse as sp
    X = np.linspace(0.1, 0.9, 40).reshape(8, 5)
    X[6, 3] = bad
    with pytest.raises(ValueError, match=r"contain NaN or infinite values \(first at row 6, "
                                         r"column 3\)"):
        clip_to_range(sp.csr_matrix(X) if sparse else X, np.zeros(5), np.ones(5))


def _stored_twice(value):
    """A 2 x 3 CSR matrix whose cell (0, 1) is stored as two entries ``value``."""
    import scipy.sparse as sp
    return sp.csr_matrix((np.array([value, value, 0.5]), np.array([1, 1, 0]),
                          np.array([0, 2, 3])), shape=(2, 3))


def test_check_feature_array_sums_duplicates_on_a_copy():
    """A sparse input comes back canonical (each cell stored once, its value the sum),
    a copy when it was not; a canonical one is returned as it is."""
    X = _stored_twice(0.75)
    out = check_feature_array(X)
    assert out.has_canonical_format and out.nnz == 2 and out[0, 1] == 1.5
    np.testing.assert_array_equal(out.toarray(), X.toarray())
    assert X.nnz == 3 and list(X.data) == [0.75, 0.75, 0.5]   # the caller's, unchanged
    assert check_feature_array(out) is out


def test_clip_to_range_clips_and_checks_the_summed_cells():
    """Duplicates are summed before the clip and the finite check: two entries 0.75
    (a 1.5) are clipped to 1 and counted once; two entries 1e308 (an inf) are refused."""
    with pytest.warns(UserWarning, match="1 feature values lay outside"):
        out = clip_to_range(_stored_twice(0.75), np.zeros(3), np.ones(3))
    np.testing.assert_array_equal(out.toarray(), [[0, 1, 0], [0.5, 0, 0]])
    with pytest.raises(ValueError, match="infinite"):
        clip_to_range(_stored_twice(1e308), np.zeros(3), np.full(3, 1.5e308))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_mechanism_refuses_a_bad_entry_it_would_perturb(bad):
    from skldp.mechanisms import HDSMechanism
    X = np.random.default_rng(0).random((30, 4)).astype(np.float32)
    X[7, 2] = bad
    G = GraphData(X)
    hds = HDSMechanism(eps=1.0, feature_range=(0, 1), random_state=0)
    with pytest.raises(ValueError, match=r"first at row 7, column 2"):
        hds.fit(G[np.arange(30) != 7]).transform(G)


@pytest.mark.parametrize("feature_range, side, shape", [
    ((np.zeros(2), 1.0), "lo", "(2,)"),
    ((0.0, np.ones(4)), "hi", "(4,)"),
    ((0.0, np.ones((3, 1))), "hi", "(3, 1)"),
])
def test_feature_range_of_the_wrong_length_names_the_expected_length(feature_range, side,
                                                                     shape):
    from skldp.mechanisms import HDSMechanism, LaplaceMechanism
    X = np.random.default_rng(0).random((5, 3))
    for mech in (HDSMechanism(eps=1.0, random_state=0), LaplaceMechanism(eps=1.0,
                                                                          random_state=0)):
        with pytest.raises(ValueError, match=rf"feature_range's {side} must be a scalar or "
                                             rf"have one value per feature \(length 3\), got "
                                             rf"shape {re.escape(shape)}"):
            mech.set_params(feature_range=feature_range).fit(X)
    # one value per feature, or a scalar, is accepted
    hds = HDSMechanism(eps=1.0, feature_range=(0.0, [1, 2, 3]), random_state=0).fit(X)
    np.testing.assert_array_equal(hds.feature_max_, [1, 2, 3])
    np.testing.assert_array_equal(hds.feature_min_, [0, 0, 0])


@pytest.mark.parametrize("bounds", [("0", "1"), (False, True), (["0", "0"], [1, 1])])
def test_feature_range_of_text_or_booleans_is_refused(bounds):
    # "0" and "1" were read as numbers (and written into the spec as text)
    from skldp.utils.validation import resolve_feature_range
    with pytest.raises(ValueError, match="must be a number"):
        resolve_feature_range(bounds, np.zeros((3, 2)))


def test_canonical_form_is_judged_from_the_arrays_not_the_cached_flag():
    # a caller's flag (scipy's public setter) or one left stale by an edit in place
    # must not let duplicate entries through: each would be clipped on its own
    import scipy.sparse as sp

    from skldp.utils._arrays import canonical_csr
    X = sp.csr_matrix((np.ones(4), np.zeros(4, np.int32), np.array([0, 4, 4], np.int32)),
                      shape=(2, 2))
    X.has_canonical_format = True
    Y = canonical_csr(X)
    assert Y is not X and Y.nnz == 1 and Y.toarray()[0, 0] == 4.0
    assert X.nnz == 4   # the caller's matrix untouched
    Z = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert canonical_csr(Z) is Z
    with pytest.warns(UserWarning):
        clipped = clip_to_range(X, np.zeros(2), np.ones(2))
    assert clipped.toarray()[0, 0] == 1.0


def test_a_masked_array_of_features_is_refused():
    # its hidden values were read as data (999 below), as scikit-learn reads them
    from skldp.mechanisms import OneBitMechanism
    X = np.ma.masked_array([[0.2, 999.0], [0.4, 0.6]], mask=[[False, True], [False, False]])
    with pytest.raises(TypeError, match="masked array"):
        GraphData(X)
    with pytest.raises(TypeError, match="masked array"):
        OneBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit_transform(X)


def _array_functions_given_a_graph():
    """(name, call) of each public function that takes a plain adjacency or feature array,
    called with a GraphData ``G`` where the array goes."""
    from skldp.central import degree_bounded_sample
    from skldp.mechanisms import discretize, group_features
    from skldp.population import list_digests
    from skldp.propagation import smooth_features, smooth_labels
    from skldp.reconstruction import (
        grr_transition_matrix,
        mean_propagation_matrix,
        metis_clusters,
        reconstruct_labels,
    )
    return [
        ("smooth_features", "A", lambda G: smooth_features(G.features, G)),
        ("smooth_features", "X", lambda G: smooth_features(G, G.adjacency)),
        ("smooth_labels", "A", lambda G: smooth_labels(np.eye(2)[np.arange(len(G)) % 2], G)),
        ("smooth_labels", "Y", lambda G: smooth_labels(G, G.adjacency)),
        ("degree_bounded_sample", "adjacency", lambda G: degree_bounded_sample(G, 3)),
        ("mean_propagation_matrix", "A", lambda G: mean_propagation_matrix(G)),
        ("metis_clusters", "A", lambda G: metis_clusters(G, 3)),
        ("reconstruct_labels", "A", lambda G: reconstruct_labels(
            G, np.arange(4), np.zeros(4, int), grr_transition_matrix(1.0, 2))),
        ("discretize", "X", lambda G: discretize(G, [0.5])),
        ("group_features", "X", lambda G: group_features(G, 2)),
        ("list_digests", "A", lambda G: list_digests(G, G.node_keys)),
    ]


@pytest.mark.parametrize("budget", [None, 5.0])
@pytest.mark.parametrize("case", range(len(_array_functions_given_a_graph())))
def test_array_functions_refuse_a_graph_data_before_reading_it(case, budget, small_graph):
    # np.asarray(G) reads the view's feature rows in the clear (epsilon inf; refused under
    # a budget): a GraphData where an array goes is refused first, saying what to pass
    func, arg, call = _array_functions_given_a_graph()[case]
    A, X, _ = small_graph
    G = GraphData(X, A).new_simulation(budget=budget)
    with pytest.raises(TypeError, match=rf"{func} takes plain arrays, but {arg} is a "
                       r"GraphData\. .*(G\.adjacency|FeatureSmoothing|FeatureGrouper|"
                       r"GRRFSMechanism|label matrix).* Nothing was read"):
        call(G)
    assert G.ledger.entries() == []
