"""GRR-FS's frequency estimation contract and its preprocessing.

* ``estimate_frequencies`` refuses any code outside ``0..c_j - 1``, the largest
  wrong one (``c_j``) included: it would otherwise add a bin to the estimate.
* A mechanism rebuilt from its collection's spec (``mechanism_from_spec``) keeps
  the sampling rate ``m / d`` of eqs. (5)-(8) of Bhaila et al. (SDM 2024), so it
  estimates the same frequencies from the same reports.
* ``discretize`` needs strictly increasing finite public edges (a repeated edge
  makes an empty bin that a public domain size would count), columns that ``X``
  has, and no NaN in a binned column; ``quantile_bin_edges`` reads no NaN column.
"""

import numpy as np
import pytest

from skldp.exceptions import InvalidParameterError, PrivacyLeakWarning
from skldp.mechanisms import GRRFSMechanism, discretize, quantile_bin_edges
from skldp.population import mechanism_from_spec


def _fitted(m=2, sizes=(3, 2, 4), n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, c, n) for c in sizes])
    mech = GRRFSMechanism(eps=1.0, m=m, domain_sizes=list(sizes), random_state=seed).fit(X)
    return mech, X


@pytest.mark.parametrize("j", [0, 1, 2])
def test_code_equal_to_the_domain_size_is_refused(j):
    """A report code ``c_j`` is one past the domain ``0..c_j - 1``: refused, as ``-1`` is."""
    mech, X = _fitted()
    reports = np.asarray(mech.transform(X))
    c = int(mech.domain_sizes_[j])
    for bad in (c, -1):
        R = reports.copy()
        R[0, j] = bad
        with pytest.raises(ValueError, match="integer codes"):
            mech.estimate_frequencies(R, j)
        with pytest.raises(ValueError, match="integer codes"):
            mech.estimate_frequencies(R[:, j], j)
    # the largest valid code is accepted, and the estimate has one entry per code
    R = reports.copy()
    R[0, j] = c - 1
    assert mech.estimate_frequencies(R, j).shape == (c,)


def test_mechanism_rebuilt_from_its_spec_keeps_the_sampling_rate():
    """The spec's mechanism uses ``r = m / d`` in P(k) (eq. (8)) and in the estimates."""
    m, sizes = 2, (3, 2, 4)
    mech, X = _fitted(m=m, sizes=sizes)
    rebuilt = mechanism_from_spec(mech.collection_)
    d = len(sizes)
    assert rebuilt.sampling_rate_ == pytest.approx(m / d)
    reports = np.asarray(mech.transform(X))
    for j, c in enumerate(sizes):
        e = np.exp(1.0)
        p, q = e / (e + c - 1), 1 / (e + c - 1)
        f = np.eye(c)[0]   # every user holds code 0
        expected = (m / d) * (q + f * (p - q)) + (1 - m / d) / c
        np.testing.assert_allclose(rebuilt.report_probabilities(f, j), expected)
        np.testing.assert_allclose(rebuilt.estimate_frequencies(reports, j),
                                   mech.estimate_frequencies(reports, j))


def test_discretize_refuses_a_repeated_edge():
    """Edges must be strictly increasing: a repeated edge is refused like a decreasing one."""
    X = np.array([[0.1], [0.6], [0.9]])
    for edges in ([0.5, 0.5], [0.2, 0.5, 0.5, 0.8], [0.5, 0.2]):
        with pytest.raises(ValueError, match="strictly increasing"):
            discretize(X, {0: edges})
    np.testing.assert_array_equal(discretize(X, {0: [0.5, 0.8]}), [[0.0], [1.0], [2.0]])


@pytest.mark.parametrize("edges", [[np.nan, 0.5], [0.2, np.nan], [-np.inf, 0.5], [0.2, np.inf]])
def test_discretize_refuses_non_finite_edges(edges):
    """NaN passed the "strictly increasing" check (a comparison with NaN is False) and
    binned [0.1, 0.2, 0.9] as [2, 2, 1]; an infinite inner edge makes an empty bin."""
    X = np.array([[0.1], [0.2], [0.9]])
    with pytest.raises(ValueError, match="strictly increasing 1-D array of finite"):
        discretize(X, [edges])
    with pytest.raises(ValueError, match="strictly increasing 1-D array of finite"):
        GRRFSMechanism(np.inf, bin_edges=[edges], random_state=0).fit(X)


def test_discretize_refuses_nan_in_a_binned_column():
    """np.digitize puts NaN in the top bin; a column without edges is left as it is."""
    X = np.array([[np.nan, 0.2], [0.2, 1.0]])
    with pytest.raises(ValueError, match="column 0 holds NaN"):
        discretize(X, {0: [0.5]})
    np.testing.assert_array_equal(discretize(X, {1: [0.5]}), [[np.nan, 0], [0.2, 1]])


@pytest.mark.parametrize("key", [-1, 3, 10, "-1", 1.0, True])
def test_discretize_refuses_a_column_x_does_not_have(key):
    """-1 binned the last column, 10 raised numpy's IndexError."""
    with pytest.raises(InvalidParameterError, match=r"bin_edges column must be an integer "
                                                    r"in 0\.\.2"):
        discretize(np.zeros((2, 3)), {key: [0.5]})
    # a spec's JSON object has string keys
    np.testing.assert_array_equal(discretize(np.ones((2, 3)), {"1": [0.5]})[:, 1], [1, 1])


def test_quantile_bin_edges_refuses_nan_columns_and_too_few_bins():
    """A NaN column gave [nan] edges, n_bins=0 no edges at all."""
    X = np.array([[np.nan, 1.0], [1.0, 2.0], [2.0, 3.0]])
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="column 0 holds NaN"):
        quantile_bin_edges(X, 2)
    with pytest.warns(PrivacyLeakWarning):
        assert quantile_bin_edges(X, 2, columns=[1])[1].tolist() == [2.0]
    for n_bins in (0, 1, 2.0):
        with pytest.warns(PrivacyLeakWarning), pytest.raises(InvalidParameterError,
                                                             match="n_bins must be"):
            quantile_bin_edges(X, n_bins)
    with pytest.warns(PrivacyLeakWarning), pytest.raises(InvalidParameterError,
                                                         match="each of columns"):
        quantile_bin_edges(X, 2, columns=[2])


@pytest.mark.parametrize("code", [2.0 ** 24, 2.0 ** 31 + 1, 2.0 ** 32])
def test_a_code_beyond_every_domain_is_refused_when_the_domains_are_read(code):
    """``domain_sizes=None`` reads ``max code + 1``: a code no domain holds (2^24 or more)
    is refused, and the refusal charged as a read of the users' features. A code of 2^31
    or more wrapped in the int32 cast to a small or negative one, and the domain read was
    silently 2 (refused only later, at transform, as "outside its domain 0..1")."""
    import warnings

    from skldp import GraphData
    from skldp.accounting import privacy_report
    X = np.array([[0.0, 1.0], [1.0, 0.0], [code, 1.0]])
    G = GraphData(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=r"column 0 .*2\^24"):
            GRRFSMechanism(1.0, random_state=0).fit(G)
    assert np.isinf(privacy_report(G).local_epsilon)


@pytest.mark.parametrize("method", ["report_probabilities", "invert_observed",
                                    "frequency_variance"])
@pytest.mark.parametrize("j", [-1, 3, True, 1.0, "0", None])
def test_frequency_methods_refuse_a_feature_index_x_does_not_have(method, j):
    """``j`` names one of the ``d`` features, as in ``estimate_frequencies``: ``-1`` was
    read as the last feature, ``True`` as feature 1, and ``3`` (of 3 features) or ``1.0``
    raised numpy's IndexError."""
    from skldp.exceptions import InvalidParameterError
    mech, _ = _fitted()
    f = np.array([0.5, 0.5])
    args = (f, j, 10) if method == "frequency_variance" else (f, j)
    with pytest.raises(InvalidParameterError, match=r"j must be an integer in 0\.\.2"):
        getattr(mech, method)(*args)


@pytest.mark.parametrize("n", [0, -10, 2.5, np.nan, True])
def test_frequency_variance_refuses_a_number_of_reports_below_one(n):
    """``n`` reports: 0 gave inf, -10 a negative variance, 2.5 a value for no ``n``."""
    from skldp.exceptions import InvalidParameterError
    mech, _ = _fitted()
    with pytest.raises(InvalidParameterError, match="n must be an integer >= 1"):
        mech.frequency_variance(np.array([0.5, 0.5]), 1, n)
    assert np.all(mech.frequency_variance(np.array([0.5, 0.5]), 1, np.int64(1)) > 0)


@pytest.mark.parametrize("cats, what", [
    ([["a", "b"], [0, 1]], "'a'"),              # numpy: "could not convert string to float"
    ([["0", "1"], [0, 1]], "'0'"),              # text read as numbers
    ([[0, 1], [0, None]], "None"),              # numpy: a TypeError about NoneType
    ([[0, 1], [0, 1, np.nan]], "nan"),          # a third value no user can hold
    ([[0, 1], [0, np.inf]], "inf"),
    ([[0, 1], [[0, 1], [2, 3]]], r"\[\[0, 1\]"),  # read as the 4 values 0..3
])
def test_categories_must_be_lists_of_finite_numbers(cats, what):
    """The features are numbers (``check_array``), so is every category: text raised
    numpy's conversion error, NaN or inf made a domain value no user can hold (a larger
    public domain size, silently), and a nested list was flattened into one domain."""
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match=r"categories of column \d must be a 1-D list of "
                       rf"finite numbers.*{what}"):
        GRRFSMechanism(1.0, categories=cats, random_state=0).fit(X)
    GRRFSMechanism(1.0, categories=[range(2), (0.0, 1.0)], random_state=0).fit(X)


@pytest.mark.parametrize("X", [[0.1, 0.5, 0.9], np.array([0.1, 0.5, 0.9]),
                               np.zeros((2, 2, 2))])
def test_preprocessing_refuses_input_that_is_not_2d(X):
    # numpy's IndexError in discretize and quantile_bin_edges; group_features read a 1-D
    # X as one user
    from skldp.mechanisms import group_features
    with pytest.raises(ValueError, match="2-D.*reshape"):
        discretize(X, [0.5])
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="2-D.*reshape"):
        quantile_bin_edges(X, 2)
    with pytest.raises(ValueError, match="2-D.*reshape"):
        group_features(X, 2)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32])
def test_discretize_of_sparse_input_is_float64(dtype):
    import scipy.sparse as sp
    X = np.array([[0, 1], [3, 1]], dtype=dtype)
    out = discretize(sp.csr_matrix(X), {0: [1.0]})
    assert out.dtype == np.float64   # as the docstring says, and as for a dense X
    np.testing.assert_array_equal(out, discretize(X, {0: [1.0]}))
    # an int8 matrix kept its dtype: a code of 300 wrapped around
    edges = np.linspace(-1.0, -0.001, 300)
    out = discretize(sp.csr_matrix(X), {1: edges})
    np.testing.assert_array_equal(out[:, 1], [300.0, 300.0])


@pytest.mark.parametrize("method", ["report_probabilities", "invert_observed",
                                    "frequency_variance"])
@pytest.mark.parametrize("shape", [(2,), (4,), (5, 2)])
def test_frequency_methods_refuse_a_last_axis_that_is_not_the_domain_size(method, shape):
    """Feature 0 has c_0 = 3 codes: a last axis of 2 or 4 broadcast against the formula
    and came back as 2 or 4 silently wrong values (one of 1 broadcast to every code)."""
    mech, _ = _fitted()
    f = np.full(shape, 0.25)
    args = (f, 0, 10) if method == "frequency_variance" else (f, 0)
    with pytest.raises(ValueError, match=rf"feature 0 has c_j = 3 codes.*length "
                                         rf"{shape[-1]}"):
        getattr(mech, method)(*args)
    # a last axis of c_j, or a scalar (one code's frequency), is still answered elementwise
    for ok in (np.full((5, 3), 0.25), 0.25):
        args = (ok, 0, 10) if method == "frequency_variance" else (ok, 0)
        assert np.shape(getattr(mech, method)(*args)) == np.shape(ok)
