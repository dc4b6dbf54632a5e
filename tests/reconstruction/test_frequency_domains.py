"""FrequencyReconstructor: the domain sizes of the reports.

``domain_sizes=None`` reads ``max report + 1`` and at least 2: a binary feature
that nobody reported as 1 is still binary (eq. (5) with c = 2, a probability, not
the code 0). With explicit sizes, a code outside ``0..c-1`` in any column (not only
the last, whose overflow the sparse one-hot matrix catches) is refused.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.reconstruction import FrequencyReconstructor


def _ring(X):
    n = len(X)
    A = sp.csr_array((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    return GraphData(np.asarray(X, dtype=float), A + A.T)


def test_a_binary_column_without_ones_stays_binary():
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 2, 12), np.zeros(12)]
    G = _ring(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # raw features, not GRR-FS reports
        auto = np.asarray(FrequencyReconstructor(1.0, 1, clip=False).fit_transform(G))
        two = np.asarray(FrequencyReconstructor(1.0, 1, domain_sizes=2,
                                                clip=False).fit_transform(G))
    np.testing.assert_allclose(auto, two)
    # eq. (5) with lambda = 0, r = m / d = 1/2: (0 - r q - (1 - r) / 2) / (r (p - q)) < 0
    p, q = np.e / (np.e + 1), 1 / (np.e + 1)
    np.testing.assert_allclose(auto[:, 1], (-0.5 * q - 0.25) / (0.5 * (p - q)))


def test_a_code_outside_the_domain_is_refused_in_any_column():
    X = np.zeros((6, 2))
    X[3, 0] = 2           # domain_sizes=2: codes 0..1
    G = _ring(X)
    rec = FrequencyReconstructor(np.inf, 2, domain_sizes=[2, 2])   # raw codes, no warning
    with pytest.raises(ValueError, match="column 0 holds codes outside 0..1"):
        rec.fit(G).transform(G)


def _grrfs_reports(X, seed=0):
    """GRR-FS reports of ``X`` (codes) on a ring, at eps=inf with every feature: the codes."""
    from skldp.mechanisms import GRRFSMechanism
    G = _ring(X)
    mech = GRRFSMechanism(np.inf, m=X.shape[1], domain_sizes=10, random_state=seed).fit(G)
    return mech.transform(G)


def test_domain_sizes_none_are_fixed_at_fit():
    # the transform input's largest codes gave the sizes: a column of codes 0..3 on
    # another graph was read with 4 codes where fit had 2 (another meaning), silently
    fit_on = _grrfs_reports(np.c_[np.arange(8) % 2, np.arange(8) % 3])
    rec = FrequencyReconstructor(1.0, 1).fit(fit_on)
    np.testing.assert_array_equal(rec.domain_sizes_, [2, 3])
    wider = _grrfs_reports(np.c_[np.arange(8) % 4, np.arange(8) % 3])
    with pytest.raises(ValueError, match=r"column 0 holds codes outside 0..1, the domain "
                                         r"fixed at fit"):
        rec.transform(wider)
    # fewer codes on another graph: still fit's domains (the third code of column 1 too)
    narrower = _grrfs_reports(np.c_[np.arange(8) % 2, np.arange(8) % 2])
    expected = FrequencyReconstructor(1.0, 1, domain_sizes=[2, 3]).fit(narrower)
    np.testing.assert_allclose(np.asarray(rec.transform(narrower)),
                               np.asarray(expected.transform(narrower)))


def test_domain_sizes_read_from_raw_features_at_fit_are_charged():
    from skldp.population import BudgetExceededError
    X = np.c_[np.arange(6) % 2, np.arange(6) % 3].astype(float)
    G = _ring(X)
    FrequencyReconstructor(np.inf, 2).fit(G)   # eps=inf, m=d: the raw codes are the reports
    reads = [e for e in G.ledger.entries() if "domain_sizes=None" in str(e)]
    assert reads and np.isinf(G.ledger.per_user("features")[1]).all()
    capped = GraphData(X, _ring(X).adjacency, budget=10.0)
    with pytest.raises(BudgetExceededError, match=r"domain_sizes=None\).*6 user\(s\).*"
                                                  r"FrequencyReconstructor.from_mechanism"):
        FrequencyReconstructor(np.inf, 2).fit(capped)
    # reports cost nothing more to read
    reports = _grrfs_reports(X)
    before = len(reports.ledger.entries())
    FrequencyReconstructor(1.0, 1).fit(reports)
    assert len(reports.ledger.entries()) == before


@pytest.mark.parametrize("domain_sizes", [2, None])
@pytest.mark.parametrize("code", [2.0 ** 24, 3e9])
def test_a_code_beyond_every_domain_is_refused(code, domain_sizes):
    # codes were cast to int32: 3e9 became -2^31, the one-hot matrix indexed before its
    # first column and the interpreter crashed (run in a child process for that reason);
    # 2^24 (no public domain holds it) read as a domain of 2^24 + 1 codes, a dense
    # n x 2^24 block per hop
    import subprocess
    import sys
    script = f"""
import warnings
import numpy as np, scipy.sparse as sp
from skldp import GraphData
from skldp.reconstruction import FrequencyReconstructor
A = sp.csr_array(np.ones((3, 3)) - np.eye(3))
G = GraphData(np.array([[0, 1], [1, 0], [{code!r}, 1]]), A)
warnings.simplefilter("ignore", UserWarning)   # raw features, not GRR-FS reports
try:
    FrequencyReconstructor(1.0, 1, domain_sizes={domain_sizes!r}).fit(G).transform(G)
except ValueError as exc:
    print("refused:", exc)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "refused:" in run.stdout
    assert "at most 16777215" in run.stdout.replace(",", "")
