"""benchmarks/bench_sparse_matmul.py: its comparison rows (timings are not checked)."""

import numpy as np
import scipy.sparse as sp


def test_compare_times_both_products_on_both_layouts(benchmark_script):
    bench = benchmark_script("bench_sparse_matmul")
    A = sp.random(60, 60, density=0.1, random_state=0, format="csr", dtype=np.float32)
    rows = bench.compare("toy", A, (3, 5), repeat=2)
    assert [(r[1], r[2]) for r in rows] == [(3, "contiguous"), (3, "column slice"),
                                            (5, "contiguous"), (5, "column slice")]
    for _, _, _, ref_ms, new_ms, ratio in rows:
        assert ref_ms > 0 and new_ms > 0
        assert np.isclose(ratio, ref_ms / new_ms)
