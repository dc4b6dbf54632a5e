"""benchmarks/bench_gpu.py runs every case (on the CPU here), so a GPU session can use it as is."""

import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from skldp.mechanisms import HDSMechanism

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch, binary_sbm):
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "benchmarks" / "bench_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # A 3-block SBM with binary features stands in for Cora and Facebook.
    G, y = binary_sbm(n=150, d=12)
    n = len(y)
    fit = np.arange(n) % 4 != 0
    hds = HDSMechanism(eps=1.0, k=3, feature_range=(0, 1), random_state=0)
    monkeypatch.setattr(mod, "_cora", lambda: (G, y, fit, ~fit))
    monkeypatch.setattr(mod, "_facebook_reports", lambda: (G, y, fit, ~fit, hds))
    return mod


@pytest.mark.slow
def test_every_case_runs_and_reports(bench, tmp_path):
    out = tmp_path / "table.md"
    rows = bench.main(["--devices", "cpu", "--out", str(out)])
    cases = [r["case"] for r in rows]
    assert len(cases) == len(set(cases)) == 2 + 4 + 2 + 9 + 2
    hds = [r for r in rows if r["case"].startswith(("HDS columns", "HDS cells"))]
    assert len(hds) == 4 and all(r["metric"] == 1.0 for r in hds)   # the devices' draws
    # a row skips only for a missing optional package (pymetis for RGNN), and says so
    skipped = [r for r in rows if r.get("skipped")]
    assert all(r["skipped"].startswith("ImportError") and "pip install" in r["skipped"]
               for r in skipped), skipped
    if importlib.util.find_spec("pymetis") is not None:
        assert not skipped
    rows = [r for r in rows if not r.get("skipped")]
    for r in rows:
        assert r["device"] == "cpu" and r["seconds"] > 0 and r["gpu_gib"] is None
        assert np.isfinite(r["metric"])
    ppr = [r for r in rows if r["case"].startswith("PPRPropagation")]
    assert all(r["metric"] <= 1e-3 for r in ppr)       # within PPRPropagation's tol
    acc = [r["metric"] for r in rows if r["metric_name"] == "test accuracy"]
    assert np.median(acc) > 0.5                           # 3 classes: chance is 1/3
    table = out.read_text()
    assert table.count("\n| ") == 1 + len(rows) + len(skipped)
    # each model's row says how many epochs (DP-GNN: steps) its fit ran: early stopping
    # may stop the devices at different epochs
    fitted = [r for r in rows if r["case"].startswith("Cora ")]
    assert len(fitted) == 9 + 2 - len(skipped) and all(r["epochs"] >= 1 for r in fitted)
    # the head on few labels chose its weight decay by cross-validation
    few = next(r for r in rows if r["case"] == f"Cora {bench.FEW_LABELS}")
    assert few["seconds"] > 0
    assert table.count(" iterations) |") == len(fitted)
    # the machine's GPU is named even when only the CPU is measured
    assert ("GPU: none" in table) == (not torch.cuda.is_available())


def _gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_check_replaces_the_page_section():
    mod = _gpu_check()
    page = f"# P\n\nbefore\n\n{mod.BEGIN}\nold table\n{mod.END}\n\nafter\n"
    new = mod.with_section(page, f"{mod.BEGIN}\nnew\n{mod.END}")
    assert "old table" not in new and "new" in new and new.startswith("# P")
    assert new.rstrip().endswith("after")
    # a page without the markers gets the section at its end
    assert mod.with_section("# P\n", "S").endswith("S\n")
    # the page itself has the markers, once
    text = (ROOT / "docs" / "performance" / "performance.md").read_text()
    assert text.count(mod.BEGIN) == text.count(mod.END) == 1


def test_table_gives_a_ratio_only_where_the_cpu_ran(bench):
    row = dict(metric=0.5, metric_name="accuracy", gpu_gib=None)
    rows = [dict(row, case="both", device="cpu", seconds=4.0),
            dict(row, case="both", device="cuda", seconds=2.0, gpu_gib=1.0),
            dict(row, case="10M", device="cuda", seconds=3.0, gpu_gib=1.0),
            dict(row, case="near", device="cpu", seconds=0.573),
            dict(row, case="near", device="cuda", seconds=0.587, gpu_gib=1.0),
            dict(row, case="far", device="cpu", seconds=42.8),
            dict(row, case="far", device="cuda", seconds=1.0, gpu_gib=1.0)]
    lines = bench._table(rows, [], "", 0.0).splitlines()
    assert lines[-7].endswith("| — | 1.00× |") and lines[-6].endswith("| 1.00 | 2.00× |")
    assert lines[-5].endswith("| 1.00 | — |")
    # two decimals below 10: 0.976 is not printed (nor plotted) as the goal's 1.0
    assert lines[-3].endswith("| 0.98× |") and lines[-1].endswith("| 42.8× |")


def test_gpu_check_names_the_tests_that_failed():
    mod = _gpu_check()
    out = ("....F.\n=== short test summary info ===\n"
           "FAILED tests/a.py::test_x[cpu] - AssertionError: 1 != 2\nERROR tests/b.py::test_y\n"
           "=== 2 failed, 10 passed in 3.2s ===\n")
    assert mod._pytest_summary(out) == ("2 failed, 10 passed in 3.2s; failed: "
                                        "`tests/a.py::test_x[cpu]`, `tests/b.py::test_y`")
    assert mod._pytest_summary("== 3 passed in 1s ==") == "3 passed in 1s"
    assert mod._pytest_summary("") == "no summary (see pytest.txt)"


@pytest.mark.long
def test_gpu_check_smoke_one_part(tmp_path):
    """The check runs a part in its own process, within its budget, and writes its files."""
    mod = _gpu_check()
    records, rows, _ = mod.main(["--smoke", "--parts", "large", "tests", "--budget", "400",
                                 "--out-dir", str(tmp_path)])
    assert [r["part"] for r in records] == ["large", "tests"]
    assert all(r["status"] == "ok" for r in records), records
    # part large runs on the GPU when there is one (its CPU row is part cpu's)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    assert [r["device"] for r in rows] == [device]
    assert all(r["case"].startswith("2000 users") and r["seconds"] > 0 for r in rows)
    # (with a GPU, part large also writes PPR's profile)
    files = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith("_profile.txt"))
    assert files == ["parts.log", "performance.md", "pytest.txt", "results.json", "summary.md"]
    summary = (tmp_path / "summary.md").read_text()
    assert "Smoke run" in summary and "2000 users" in summary and " passed" in summary
    assert "--out-dir $OUT" in summary and str(tmp_path) not in summary   # no machine path
    page = (tmp_path / "performance.md").read_text()
    assert summary.strip() in page
    # a part with no time left is reported, not run
    records = mod.run_parts(["pyg"], str(tmp_path), True, budget=1)
    assert records[0]["status"] == "not run"


@pytest.mark.long
def test_gpu_check_interrupts_a_part_out_of_time(tmp_path, monkeypatch):
    """A part past its limit is interrupted (pytest still reports), then reported."""
    mod = _gpu_check()
    monkeypatch.setattr(mod, "LIMITS", {**mod.LIMITS, "tests": (20, 1)})
    monkeypatch.setattr(mod, "GRACE", 8)
    slow = tmp_path / "test_slow.py"
    slow.write_text("import time\n\ndef test_a():\n    pass\n\n"
                    "def test_b():\n    time.sleep(60)\n")
    monkeypatch.setattr(mod, "commands", lambda out, smoke, gpu=None: {"tests": [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=3",
        str(slow)]})
    t0 = time.monotonic()
    records = mod.run_parts(["tests"], str(tmp_path), False, budget=100)
    assert time.monotonic() - t0 < 40
    assert records[0]["status"] == "timed out"
    assert "KeyboardInterrupt" in records[0]["pytest"]   # pytest's own summary came back
    assert "1 passed" in mod._pytest_summary(records[0]["pytest"])


def test_a_suite_out_of_time_writes_where_its_processes_wait(tmp_path):
    """The suite's processes register a stack dump (tests/conftest.py); the check asks
    them, and only them, for it before interrupting the suite."""
    import os
    import signal
    import subprocess
    mod = _gpu_check()
    folder = tmp_path / "stacks"
    folder.mkdir()
    code = ("import importlib.util, subprocess, sys, time\n"
            "spec = importlib.util.spec_from_file_location('c', sys.argv[1])\n"
            "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
            "other = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            # (the pid printed from inside the function: its stack is then the one asked)
            "def waits_here():\n    print(other.pid, flush=True)\n    time.sleep(60)\n"
            "waits_here()\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(ROOT / "tests" / "conftest.py")],
                            env=dict(os.environ, SKLDP_STACKS_DIR=str(folder)),
                            stdout=subprocess.PIPE, text=True)
    other = int(proc.stdout.readline())
    try:
        assert other in mod._descendants(proc.pid)
        assert mod.dump_stacks(proc.pid, str(folder), wait=1.0) == [f"stacks-{proc.pid}.txt"]
        assert "waits_here" in (folder / f"stacks-{proc.pid}.txt").read_text()
        assert proc.poll() is None
        os.kill(other, 0)   # the unregistered child was not signalled (it would have ended)
    finally:
        os.kill(other, signal.SIGKILL)
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_gpu_check_smoke_every_part(tmp_path):
    mod = _gpu_check()
    records, rows, pyg = mod.main(["--smoke", "--budget", "900", "--out-dir", str(tmp_path)])
    gpu = torch.cuda.is_available()
    # without a GPU parts bench and large ran on the CPU: no part cpu
    assert [r["status"] for r in records] == ["ok" if gpu or r["part"] != "cpu"
                                              else "not run" for r in records]
    assert [r["part"] for r in records] == mod.PARTS
    devices = 2 if gpu else 1
    # ppr: scipy + torch per device; HDS columns and cells: numpy + torch per device;
    # privge and LPGNN on Facebook, 9 models, 2 link predictors, large per device; huge
    # on the last device only
    assert len(rows) == 3 + devices * (1 + 2 + 2 + 9 + 2 + 1) + 1 and len(pyg) == 2
    large = [r for r in rows if r["case"].startswith("2000 users")]
    assert [r["device"] for r in large] == (["cpu", "cuda"] if gpu else ["cpu"])


def test_ppr_profile_says_where_the_first_call_goes(bench, tmp_path, monkeypatch):
    """Part ``large``'s PPR profile (on the CPU here): the wall time and the operators."""
    from skldp.propagation import PPRPropagation, _ppr
    path = tmp_path / "ppr_profile.txt"
    bench.profile_ppr("cpu", 3000, str(path))
    text = path.read_text()
    wall = float(text.split()[1])
    assert text.startswith("wall ") and 0 < wall < 60
    assert "Self CPU" in text and "sparse" in text   # the products are among the operators
    # a large case's reports, profiled over a copy of their graph: the operator that
    # their timed run built is built again
    R = bench._reports_at_scale(3000).R
    PPRPropagation(device="cpu", backend="torch").fit_transform(R)
    built, real_init = [], _ppr._TorchOps.__init__

    def spy(self, *args, **kwargs):
        built.append(1)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(_ppr._TorchOps, "__init__", spy)
    bench.profile_ppr("cpu", 3000, str(path), R)
    assert built == [1] and path.read_text().startswith("wall ")


def test_profiles_are_taken_after_every_case_is_timed(bench, tmp_path, monkeypatch):
    """A case queues its CUDA profile; main takes it after the rows are written (the
    profiler slows later CUDA work), and a failing profile does not stop the run."""
    taken = []

    def case(devices):
        for d in ("cpu", "cuda"):   # the CPU is never profiled
            bench._queue_profile(d, f"{d}_profile.txt", lambda path: taken.append(
                (Path(path).name, (tmp_path / "rows.json").exists())))
        bench._queue_profile("cuda", "bad_profile.txt", lambda path: 1 / 0)
        return [dict(case="c", device="cpu", seconds=0.1, metric=1.0, metric_name="m",
                     gpu_gib=None)]

    monkeypatch.setattr(bench, "CASES", dict(bench.CASES, ppr=case))
    monkeypatch.setattr(bench, "_warm_up", lambda devices: None)
    rows = bench.main(["--cases", "ppr", "--devices", "cpu", "--json",
                       str(tmp_path / "rows.json"), "--profile-dir", str(tmp_path)])
    assert [r["case"] for r in rows] == ["c"]
    assert taken == [("cuda_profile.txt", True)] and bench.PROFILES == []
    bench.PROFILE_DIR = None
    bench._queue_profile("cuda", "none.txt", lambda path: taken.append(path))
    assert bench.PROFILES == []   # no --profile-dir: nothing queued


def test_sharded_reports_are_the_reports_of_the_whole_graph(bench, binary_sbm):
    """Each user's report depends only on its row and key: shards give the same reports."""
    import scipy.sparse as sp

    from skldp import GraphData
    G0, _ = binary_sbm(n=120, d=12)
    G = GraphData(G0.features, G0.adjacency, node_ids=np.arange(1000, 1120))
    mech = HDSMechanism(eps=1.0, k=3, feature_range=(0, 1), random_state=0).fit(G)
    whole = mech.transform(G).features
    shards = bench.sharded_reports(mech, G, n_jobs=2)
    assert shards.adjacency is G.adjacency
    assert (sp.csr_matrix(shards.features) != sp.csr_matrix(whole)).nnz == 0
    # default ids (0..n-1) key the shards the same way
    mech0 = HDSMechanism(eps=1.0, k=3, feature_range=(0, 1), random_state=0).fit(G0)
    assert (sp.csr_matrix(bench.sharded_reports(mech0, G0, n_jobs=1).features)
            != sp.csr_matrix(mech0.transform(G0).features)).nnz == 0


@pytest.mark.parametrize("device", [None, "cpu"])
def test_synthetic_graph_is_simple_undirected_and_drawn_alike(device, monkeypatch):
    # the benchmarks' graph, drawn by numpy or on a torch device (the GPU check's way)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from synthetic import uniform_graph
    n, m = 2000, 20_000
    G, y = uniform_graph(n, d=8, n_edges=m, n_classes=5, device=device)
    A = G.adjacency
    assert A.shape == (n, n) and A.has_canonical_format
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0 and (A.data == 1).all()
    assert 0.99 * 2 * m < A.nnz <= 2 * m          # a few self loops and repeats dropped
    X = G.features
    assert X.shape == (n, 8) and X.dtype == np.float32 and 0 <= X.min() and X.max() < 1
    assert abs(X.mean() - 0.5) < 0.01 and set(np.unique(y)) == set(range(5))
    deg = np.diff(A.indptr)                       # uniform endpoints: Poisson(20) degrees
    assert abs(deg.mean() - 2 * m / n) < 0.5 and deg.var() < 2 * deg.mean()


def test_gpu_check_runs_the_cpu_rows_in_a_part_of_their_own(tmp_path, monkeypatch):
    """With a GPU, the CPU's rows of bench and large are part cpu's, first; without
    one, bench and large run on the CPU and part cpu is not run."""
    mod = _gpu_check()
    order = mod.PARTS
    assert order[0] == "cpu" and order.index("huge") < order.index("tests")
    with_gpu = mod.commands(str(tmp_path), smoke=False, gpu=True)
    for part in ("bench", "large"):   # they profile, on CUDA, what they timed
        assert with_gpu[part][-2:] == ["--devices", "cuda"]
        assert with_gpu[part][with_gpu[part].index("--profile-dir") + 1] == str(tmp_path)
    cpu = with_gpu["cpu"]
    assert cpu[-2:] == ["--devices", "cpu"] and "--profile-dir" not in cpu
    assert {"ppr", "hds_columns", "privge", "models", "large"} <= set(cpu)
    without = mod.commands(str(tmp_path), smoke=False, gpu=False)
    assert without["large"][-2:] == without["bench"][-2:] == ["--devices", "cpu"]
    monkeypatch.setattr(mod, "_has_gpu", lambda: False)
    records = mod.run_parts(["cpu"], str(tmp_path), True, budget=100)
    assert records[0]["status"] == "not run" and records[0]["why"] == "no GPU"


def test_cpu_halves_keep_a_cores_threads_together():
    mod = _gpu_check()
    # two threads per core, siblings numbered i and i + 4 (as Linux often numbers them)
    assert mod.cpu_halves(range(8), core=lambda c: c % 4) == ([0, 4, 1, 5], [2, 6, 3, 7])
    assert mod.cpu_halves(range(3), core=lambda c: c) == ([0], [1, 2])
    assert mod.cpu_halves([0, 1], core=lambda c: 0) is None   # one core: nothing to split
    halves = mod.cpu_halves()   # this machine's, by what Linux says
    assert halves is None or not set(halves[0]) & set(halves[1])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and two CPUs")
def test_the_cpu_part_runs_beside_the_cards_parts_and_the_suite_after_it(tmp_path,
                                                                        monkeypatch):
    """Part cpu runs in the background on its half of the CPUs, without the card, while
    the next parts run on the other half; the suite starts once it has ended."""
    mod = _gpu_check()
    a, b = sorted(os.sched_getaffinity(0))[:2]
    monkeypatch.setattr(mod, "_has_gpu", lambda: True)
    monkeypatch.setattr(mod, "cpu_halves", lambda: ([a], [b]))
    show = ("import os, sys, time; time.sleep(float(sys.argv[1])); "
            "print(','.join(map(str, sorted(os.sched_getaffinity(0)))), "
            "repr(os.environ.get('CUDA_VISIBLE_DEVICES')), os.environ.get('OMP_NUM_THREADS'), "
            "time.time())")
    monkeypatch.setattr(mod, "commands", lambda out, smoke, gpu=None: {
        # (more output than a pipe holds: no one reads a background part's output meanwhile)
        "cpu": [sys.executable, "-c", "import sys; sys.stderr.write('x' * 200_000); " + show,
                "3"],
        "pyg": [sys.executable, "-c", show, "1"],
        "huge": [sys.executable, "-c", show, "1"], "tests": [sys.executable, "-c", show, "0"]})
    t0 = time.monotonic()
    records = mod.run_parts(["cpu", "pyg", "huge", "tests"], str(tmp_path), True, budget=60)
    assert time.monotonic() - t0 < 5.5   # not 3 + 1 + 1 + 0 s one after the other
    assert [r["status"] for r in records] == ["ok"] * 4, records
    seen = {r["part"]: r["output"].split() for r in records}
    assert seen["cpu"][:3] == [str(a), "''", "1"]
    assert seen["pyg"][:3] == seen["huge"][:3] == [str(b), "None", "1"]
    assert seen["tests"][1] == "None" and float(seen["tests"][3]) >= float(seen["cpu"][3])
    summary = mod.summary(records, [], [], [], smoke=True)
    assert "| cpu | ok |" in summary


def test_gpu_check_gives_each_test_worker_its_share_of_threads(monkeypatch):
    mod = _gpu_check()
    monkeypatch.setattr(mod, "_has", lambda module: True)
    import skldp.utils
    monkeypatch.setattr(skldp.utils, "available_cpus", lambda: 16)
    assert mod.part_env("tests", smoke=False) == {"OMP_NUM_THREADS": "1"}
    assert mod.part_env("bench", smoke=False) == {} == mod.part_env("tests", smoke=True)
    monkeypatch.setattr(skldp.utils, "available_cpus", lambda: 40)   # 16 workers at most
    assert mod.part_env("tests", smoke=False) == {"OMP_NUM_THREADS": "2"}
    monkeypatch.setattr(mod, "_has", lambda module: False)           # no xdist: one process
    assert mod.part_env("tests", smoke=False) == {}


def test_operations_per_epoch_are_counted_per_epoch(bench, monkeypatch, capsys):
    """benchmarks/bench_epoch_ops.py: a fit's operations grow by about the same count
    each epoch (set-up and prediction cancel; the early stopper copies the weights only
    at the checks that improve), and the card's path changes what it counts."""
    spec = importlib.util.spec_from_file_location("bench_epoch_ops",
                                                  ROOT / "benchmarks" / "bench_epoch_ops.py")
    ops = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ops)
    monkeypatch.setitem(sys.modules, "bench_gpu", bench)   # the small stand-in for Cora
    from skldp.models import GCNClassifier
    G, y, fit, _ = bench._cora()
    gcn = GCNClassifier(device="cpu", random_state=0)
    one = ops.count_per_epoch(gcn, lambda m: m.fit(G[fit], y[fit]), (2, 4))
    other = ops.count_per_epoch(gcn, lambda m: m.fit(G[fit], y[fit]), (3, 7))
    assert one["ops"] > 20 and abs(one["ops"] - other["ops"]) <= 3
    # the card's path: the stop flag is read every 16 checks, not every check
    ops.card_path(monkeypatch.setattr)
    card = ops.count_per_epoch(gcn, lambda m: m.fit(G[fit], y[fit]), (2, 4))
    assert card["ops"] != one["ops"]
    ops.main(["--models", "VGAELinkPredictor", "--epochs", "2", "4", "--cpu-path"])
    row = [line for line in capsys.readouterr().out.splitlines()
           if line.startswith("| VGAELinkPredictor")]
    assert len(row) == 1 and float(row[0].split("|")[2]) > 20
    # --host-time: a column of host milliseconds per epoch (more epochs take longer)
    ops.main(["--models", "GCNClassifier", "--epochs", "2", "4", "--cpu-path",
              "--host-time", "--repeat", "1"])
    row = [line for line in capsys.readouterr().out.splitlines()
           if line.startswith("| GCNClassifier")]
    assert len(row) == 1 and float(row[0].split("|")[4]) > 0


def test_models_are_timed_after_a_short_warm_up_on_a_copy(bench, binary_sbm):
    """Each model's timed fit follows a fit of a clone cut to 20 epochs (DP-GNN: steps) on
    a copy of the data: the model itself keeps its settings, and the copy shares no
    operator or memo with the graph the timed fit reads."""
    from sklearn.pipeline import Pipeline

    from skldp.central import DPGNNClassifier
    from skldp.models import MLPHead, VGAELinkPredictor
    from skldp.propagation import PPRPropagation
    G, _ = binary_sbm(n=60, d=6)
    copy = bench._fresh(G)
    np.testing.assert_array_equal(np.asarray(copy.features), np.asarray(G.features))
    assert (copy.adjacency != G.adjacency).nnz == 0
    assert copy._store.info() is not G._store.info() and copy.token != G.token
    seen = []
    for model, want in [
            (VGAELinkPredictor(epochs=200), {"epochs": 20, "min_epochs": 0}),
            (Pipeline([("ppr", PPRPropagation()), ("clf", MLPHead(epochs=300))]),
             {"clf__epochs": 20}),
            (DPGNNClassifier(classes=[0, 1], n_steps=100), {"n_steps": 20}),
            (MLPHead(epochs=5), {"epochs": 5})]:
        before = model.get_params()
        bench._warm(model, seen.append)
        warmed = seen.pop()
        assert warmed is not model and model.get_params().keys() == before.keys()
        assert all(model.get_params()[k] == before[k] for k in want)
        assert {k: warmed.get_params()[k] for k in want} == want
