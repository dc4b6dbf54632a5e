"""benchmarks/bench_head_weight_decay.py: its cells choose a weight decay without a test label."""

import numpy as np
import pytest

from skldp.datasets import load_dataset


def test_a_validation_split_reports_the_decay_its_validation_nodes_chose(benchmark_script):
    bench = benchmark_script("bench_head_weight_decay")
    bunch = load_dataset("cora")
    accs, default, chosen = bench.cell(bunch, "20/30", "raw", 0)
    assert len(accs) == len(bench.DECAYS) + 2 and chosen in bench.DECAYS
    # the chosen column is the fixed column of the decay chosen, not the best test score
    assert accs[-1] == accs[bench.DECAYS.index(chosen)]
    # with validation nodes the default head is the fixed 5e-5 one
    assert default == 5e-5 and accs[-2] == accs[0]
    assert 0.7 < accs[0] < 0.9   # the 5e-5 head on Cora's raw features


@pytest.mark.long
def test_without_validation_nodes_the_default_chooses_its_own_decay(benchmark_script):
    bench = benchmark_script("bench_head_weight_decay")
    accs, default, chosen = bench.cell(load_dataset("cora"), "public", "raw", 0)
    assert chosen is None and np.isnan(accs[-1])
    assert default != 5e-5   # 140 rows: cross-validated (Cora's picks are 1e-3 to 1e-2)
    assert accs[-2] > accs[0]


def test_no_split_fits_on_a_test_node(benchmark_script):
    bench = benchmark_script("bench_head_weight_decay")
    bunch = load_dataset("cora")
    y = np.asarray(bunch.target)
    for split, n_fit, has_val in (("public", 140, False), ("20/30", 350, True),
                                  ("50/25/25", None, False)):
        fit, val, test = bench._masks(bunch, y, split, 0)
        assert not (fit & test).any() and (val is not None) == has_val
        if n_fit is not None:
            assert fit.sum() == n_fit
        if has_val:
            assert (val <= fit).all()   # the head early-stops on them, never trains
