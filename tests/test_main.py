"""The main job ``python -m skldp`` on a tiny setting."""

import re
import subprocess
import sys

import pytest

from skldp.__main__ import _parse, main


def _check_output(out, dataset, header, eps):
    lines = out.splitlines()
    assert lines[0].startswith(f"skldp {dataset}: {header}"), lines[0]
    assert f"HDS eps={eps}" in lines[0]
    seed_lines = [line for line in lines if line.startswith("  seed ")]
    assert len(seed_lines) == 1, seed_lines
    assert re.search(r"feature-free [01]\.\d{3}", seed_lines[0]), seed_lines
    for label in (f"PrivGE (HDS eps={eps})", "graph-only baseline", "non-private (eps=inf)",
                  "feature-free (label prop.)"):
        m = re.search(re.escape(label) + r"\s+(\d+\.\d) ±\s+(\d+\.\d) %", out)
        assert m, (label, out)
        assert 0 <= float(m.group(1)) <= 100
        assert float(m.group(2)) == 0.0  # one seed: std 0
    assert "test accuracy, mean ± std over 1 seed(s):" in out
    assert f"epsilon spent per user: {eps} (protects features" in out
    assert f"hds: HDSMechanism epsilon={eps} (local DP; protects features" in out


def test_main_tiny_setting(capsys):
    # A small real graph (577 nodes, 32 raw numeric features) keeps this fast;
    # its bounds are not public, so the job takes them from the data and warns.
    from skldp.exceptions import PrivacyLeakWarning
    with pytest.warns(PrivacyLeakWarning):
        assert main(["--dataset", "student_rgnn", "--seeds", "1", "--epochs", "3",
                     "--eps", "2"]) == 0
    _check_output(capsys.readouterr().out, "student_rgnn", "577 nodes, 32 features", 2)


@pytest.mark.slow
def test_main_cora_one_seed(capsys):
    assert main(["--seeds", "1", "--epochs", "30", "--eps", "2"]) == 0
    out = capsys.readouterr().out
    _check_output(out, "cora", "2708 nodes, 1433 features, 2708 labelled", 2)
    acc = float(re.search(r"non-private \(eps=inf\)\s+(\d+\.\d)", out).group(1))
    assert acc > 50  # 30 epochs already beat the 30 % majority class
    lp = float(re.search(r"feature-free \(label prop\.\)\s+(\d+\.\d)", out).group(1))
    assert lp > 80  # label propagation on Cora: about 87 %


@pytest.mark.parametrize("argv", [["--seeds", "0"], ["--epochs", "0"], ["--eps", "0"],
                                  ["--eps", "-1"], ["--bogus"]])
def test_main_rejects_bad_options(argv):
    with pytest.raises(SystemExit) as e:
        _parse(argv)
    assert e.value.code == 2


def test_main_defaults():
    a = _parse([])
    assert (a.dataset, a.eps, a.seeds, a.epochs) == ("cora", 1.0, 5, 100)


def test_main_dataset_without_features():
    with pytest.raises(SystemExit, match="no node features"):
        main(["--dataset", "pubmed_nofeatures", "--seeds", "1", "--epochs", "1"])


def test_module_entry_point_help():
    r = subprocess.run([sys.executable, "-m", "skldp", "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0
    for opt in ("--dataset", "--eps", "--seeds", "--epochs"):
        assert opt in r.stdout
