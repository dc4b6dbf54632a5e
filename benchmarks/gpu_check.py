"""The prepared GPU check (issue 33): one command, one GPU, at most five minutes.

Runs, each part in its own process with its own time limit, within one
overall budget (``--budget``, 285 s), in this order:

1. ``bench``: every case of ``bench_gpu.py`` on the CPU and on CUDA (PPR on
   Facebook's HDS reports, Facebook PrivGE end to end, LPGNN on Facebook, every
   model on Cora);
2. ``pyg``: ``bench_pyg.py``, skldp's GCNClassifier beside PyTorch Geometric's
   GCN on Cora and CiteSeer (Planetoid public split);
3. ``large``: PrivGE at 1M users / 10M edges on CUDA (on the CPU when there is
   no GPU);
4. ``huge``: PrivGE at 10M users / 100M edges on CUDA (the graph drawn on the
   card);
5. ``tests``: the test suite, every torch model on CUDA through ``device="auto"``
   (``pytest -n <CPUs, at most 16>`` when pytest-xdist is installed, each worker
   with its share of the CPUs' threads, the tests marked ``long`` handed out
   first), with the time the parts before left it;
6. ``large_cpu``: with a GPU and at least 40 s left, the 1M-user case on the CPU,
   the row that gives ``large`` its CPU / CUDA ratio (about 30 s: after the suite,
   so that the suite has its time);
7. ``profile``: with a GPU and the time left, where the time of LPGNN on
   Facebook goes on the card (``lpgnn_facebook_profile.txt``): last, and in a
   process of its own, since CUDA work after the profiler seemed to stay slower.

With a GPU, parts ``bench`` and ``large`` also profile, after their timed cases,
VGAE on Cora (``vgae_cora_profile.txt``) and PPR's first call on 1M users
(``ppr_1m_profile.txt``): the two cases short of the issue's goals, profiled
whatever time the suite leaves.

A part that fails or runs out of time is reported as such and the others go
on (a part out of time is interrupted first, so that pytest still prints its
summary: the tests that failed so far and the slowest); a row that needs a
missing optional package (pymetis, dp-accounting, torch_geometric) says so. It
writes to ``--out-dir``:
``summary.md`` (the GPU table with the machine, versions and date),
``performance.md`` (``docs/performance/performance.md`` with that table in place of
its GPU section: copy it over the page), ``results.json`` (every row),
``pytest.txt`` (the test run's last lines) and ``parts.log`` (each part's
command, time and last lines of output); with a GPU also the profiles above.

Command (from the repository root, with a copy of the datasets folder in
``.gpudata``)::

    SKLDP_DATASETS_DIR=$PWD/.gpudata PYTHONPATH=$PWD python benchmarks/gpu_check.py --out-dir $OUT

``--smoke`` runs every part at toy sizes (two seeds of PyG, 3 epochs, a 2,000- and
a 3,000-user graph, one small test file, small stand-ins for Cora and
Facebook), on the CPU when there is no GPU: what ``tests/test_bench_gpu.py``
checks. ``--parts`` picks parts.
"""

import argparse
import glob
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PAGE = os.path.join(ROOT, "docs", "performance", "performance.md")
BEGIN, END = "<!-- gpu-check:begin -->", "<!-- gpu-check:end -->"

# part -> (seconds it may take at most, the least worth starting it with)
LIMITS = {"bench": (110, 30), "pyg": (60, 15), "large": (60, 15), "huge": (120, 40),
          "tests": (180, 30), "large_cpu": (60, 40), "profile": (60, 25)}
# parts that only make sense beside a GPU (without one, "large" already ran on the CPU)
GPU_ONLY = {"large_cpu"}
PARTS = list(LIMITS)
GRACE = 10   # seconds a part has to report after its interruption


def _has(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


def _has_gpu():
    import torch
    return torch.cuda.is_available()


def _test_workers():
    """xdist workers of the ``tests`` part (one per CPU, at most 16), or None without xdist."""
    if not _has("xdist"):
        return None
    from skldp.utils import available_cpus
    return min(16, available_cpus())


def _xdist_at_least(*version):
    import xdist
    got = tuple(int(p) for p in re.findall(r"\d+", xdist.__version__)[:2])
    return got >= version


def part_env(name, smoke):
    """Variables a part adds to the environment: each test worker's share of the CPUs.

    One worker per CPU, each with torch's default of a thread per CPU, would run
    CPUs² busy threads (the suite's longest tests took about a minute so).
    """
    workers = _test_workers() if name == "tests" and not smoke else None
    if not workers:
        return {}
    from skldp.utils import available_cpus
    return {"OMP_NUM_THREADS": str(max(1, available_cpus() // workers))}


def commands(out, smoke, gpu=None):
    """The command of each part (``out``: the output folder; ``gpu``: whether there is
    one, asked of torch when None)."""
    gpu = _has_gpu() if gpu is None else gpu
    py = sys.executable
    bench = [py, os.path.join(HERE, "bench_gpu.py")] + (["--tiny"] if smoke else [])
    if smoke:
        tests = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 os.path.join(ROOT, "tests", "utils", "test_adjacency.py")]
    else:
        # the slowest tests listed (--durations): where the part's time goes on the card
        tests = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "--durations=25"]
        workers = _test_workers()
        if workers:
            tests += ["-n", str(workers)]
            if _xdist_at_least(3, 3):
                # one test at a time, in order: the long tests first (tests/conftest.py)
                tests += ["--dist", "load", "--maxschedchunk", "1"]
            elif _xdist_at_least(3, 2):
                tests += ["--dist", "worksteal"]   # idle workers take queued tests
    return {
        "tests": tests,
        # with a GPU, bench and large also profile VGAE on Cora and PPR on 1M users on
        # the card, after their timed cases
        "bench": bench + ["--cases", "ppr", "hds_columns", "privge", "models",
                          "--json", os.path.join(out, "_bench.json"), "--profile-dir", out],
        "profile": bench + ["--cases", "profile", "--profile-dir", out],
        "pyg": [py, os.path.join(HERE, "bench_pyg.py"), "--json", os.path.join(out, "_pyg.json")]
        + (["--seeds", "2", "--epochs", "3", "--datasets", "cora"] if smoke else ["--seeds", "5"]),
        # the CPU's 1M-user row (~25 s) waits for part large_cpu, after the suite
        "large": bench + ["--cases", "large", "--json", os.path.join(out, "_large.json"),
                          "--profile-dir", out, "--devices", "cuda" if gpu else "cpu"]
        + (["--large-nodes", "2000"] if smoke else []),
        "large_cpu": bench + ["--cases", "large", "--json", os.path.join(out, "_large_cpu.json"),
                              "--devices", "cpu"]
        + (["--large-nodes", "2000"] if smoke else []),
        "huge": bench + ["--cases", "huge", "--json", os.path.join(out, "_huge.json")]
        + (["--huge-nodes", "3000"] if smoke else []),
    }


def _tail(text, n=40):
    return "\n".join(text.splitlines()[-n:])


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_parts(parts, out, smoke, budget):
    """Run ``parts`` in order within ``budget`` seconds; one record per part."""
    gpu = _has_gpu()
    cmds = commands(out, smoke, gpu)
    # the parts run this checkout's skldp, whatever is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    deadline = time.monotonic() + budget
    records = []
    for name in parts:
        limit, least = LIMITS[name]
        left = deadline - time.monotonic()
        extra = part_env(name, smoke)
        if name == "tests":   # where the suite waits, if it runs out of time
            extra["SKLDP_STACKS_DIR"] = os.path.join(out, "stacks")
            os.makedirs(extra["SKLDP_STACKS_DIR"], exist_ok=True)
        rec = {"part": name, "command": " ".join([f"{k}={v}" for k, v in extra.items()]
                                                 + cmds[name])}
        if name in GPU_ONLY and not gpu:
            rec.update(status="not run", why="no GPU")
            records.append(rec)
            continue
        if left < least:
            rec.update(status="not run", why=f"{left:.0f} s left of the {budget:.0f} s budget")
            records.append(rec)
            continue
        t0 = time.monotonic()
        # SIGINT as by default in the part (a shell's background job inherits it ignored)
        proc = subprocess.Popen(cmds[name], cwd=ROOT, env=dict(env, **extra),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_default_sigint)
        try:
            stdout, stderr = proc.communicate(timeout=max(1.0, min(limit, left) - GRACE))
            rec["status"] = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
        except subprocess.TimeoutExpired:
            if name == "tests":
                rec["stacks"] = dump_stacks(proc.pid, extra["SKLDP_STACKS_DIR"])
            # interrupted, not killed: pytest then prints its summary, with the tests that
            # failed so far and the slowest ones
            proc.send_signal(signal.SIGINT)
            try:
                stdout, stderr = proc.communicate(timeout=GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
            rec["status"] = "timed out"
        rec["output"] = _tail(stdout + "\n" + stderr)
        if name == "tests":
            rec["pytest"] = stdout
        rec["seconds"] = time.monotonic() - t0
        print(f"[{name}: {rec['status']}, {rec['seconds']:.0f} s]", file=sys.stderr, flush=True)
        records.append(rec)
    return records


def _descendants(pid):
    """The processes ``pid`` started, and theirs (from Linux's /proc; none elsewhere)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in glob.glob(f"/proc/{p}/task/*/children"):
            try:
                with open(task) as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:   # ended meanwhile
                kids = []
            found += kids
            todo += kids
    return found


def dump_stacks(pid, folder, wait=2.0):
    """Ask ``pid`` and the processes under it that registered a stack dump in ``folder``
    (tests/conftest.py: pytest and its workers) to write their threads' stacks there;
    the files written, by name. Others are left alone (SIGUSR1 would end them)."""
    registered = [p for p in [pid] + _descendants(pid)
                  if os.path.exists(os.path.join(folder, f"stacks-{p}.txt"))]
    for p in registered:
        try:
            os.kill(p, signal.SIGUSR1)
        except OSError:
            pass
    time.sleep(wait)
    written = []
    for p in registered:
        path = os.path.join(folder, f"stacks-{p}.txt")
        if os.path.exists(path) and os.path.getsize(path):
            written.append(os.path.basename(path))
    return written


def _drop_empty(folder):
    """Remove the empty files of ``folder``, and ``folder`` if nothing is left."""
    for path in glob.glob(os.path.join(folder, "*")):
        if os.path.getsize(path) == 0:
            os.remove(path)
    if os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)


def _rows(out, name):
    path = os.path.join(out, f"_{name}.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = json.load(f)
    os.remove(path)   # its rows go to results.json
    return rows


def machine():
    """Machine, versions and date, in words."""
    import numpy
    import scipy
    import sklearn
    import torch
    gpu = "no GPU"
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        gpu = f"{p.name} ({p.total_memory / 2**30:.0f} GiB), CUDA {torch.version.cuda}"
    pyg = "torch_geometric "
    try:
        import torch_geometric
        pyg += torch_geometric.__version__
    except ImportError:
        pyg += "not installed"
    from skldp.utils import available_cpus
    cpus = available_cpus()
    return (f"{gpu}; {cpus} CPUs ({platform.machine()}); Python {platform.python_version()}, "
            f"torch {torch.__version__}, numpy {numpy.__version__}, scipy {scipy.__version__}, "
            f"scikit-learn {sklearn.__version__}, {pyg}; "
            f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")


def _pytest_summary(text):
    """pytest's last summary line, and the tests that failed (or errored), named."""
    lines = (text or "").splitlines()
    counts = [x for x in lines if re.search(r"\d+ (passed|failed)", x)]
    got = counts[-1].strip("= ") if counts else "no summary (see pytest.txt)"
    failed = [x.split()[1] for x in lines if x.startswith(("FAILED ", "ERROR ")) and
              len(x.split()) > 1]
    return got + (f"; failed: {', '.join(f'`{t}`' for t in failed)}" if failed else "")


def summary(records, rows, pyg_rows, argv, smoke):
    sys.path.insert(0, HERE)
    from bench_gpu import _table
    from bench_pyg import table as pyg_table
    lines = [BEGIN, "### On one GPU (`benchmarks/gpu_check.py`)", "",
             f"Machine: {machine()}." + (" **Smoke run (toy sizes): not a measurement.**"
                                         if smoke else ""), "",
             "Command: `SKLDP_DATASETS_DIR=$PWD/.gpudata PYTHONPATH=$PWD python "
             "benchmarks/gpu_check.py " + " ".join(argv) + "`", ""]
    tests = [r for r in records if r["part"] == "tests"]
    if tests:
        t = tests[0]
        got = _pytest_summary(t.get("pytest")) if "pytest" in t else t.get("why", "")
        stacks = (f"; the stacks of {len(t['stacks'])} of its processes when it ran out "
                  "of time are in `stacks/`" if t.get("stacks") else "")
        lines += [f"Test suite (every model with `device=\"auto\"`: CUDA when there is one): "
                  f"{got} ({t['status']}{stacks}).", ""]
    if rows:
        table = _table(rows, ["(parts bench, large, large_cpu, huge)"], "", 0.0).split("\n")
        lines += table[table.index("") + 1:] + [""]   # the rows, without its own header
    if pyg_rows:
        lines += ["Same files, same protocol: skldp's GCNClassifier and PyTorch Geometric's "
                  "GCN (Planetoid public split, row-normalised features, 2 layers, 16 hidden, "
                  "dropout 0.5, Adam 0.01, weight decay 5e-4, "
                  f"{next((r['epochs'] for r in pyg_rows if 'epochs' in r), '—')} epochs, best "
                  "validation loss on the 500 validation nodes; time per fit includes moving the "
                  "graph to the device).", "", pyg_table(pyg_rows), ""]
    lines += ["| part | status | seconds |", "|---|---|---|"]
    for r in records:
        secs = f"{r['seconds']:.0f}" if "seconds" in r else "—"
        lines.append(f"| {r['part']} | {r['status']}{': ' + r['why'] if r.get('why') else ''} "
                     f"| {secs} |")
    lines.append(END)
    return "\n".join(lines)


def with_section(page_text, section):
    """The page with ``section`` in place of its GPU section (appended if it has none)."""
    if BEGIN in page_text and END in page_text:
        a, b = page_text.index(BEGIN), page_text.index(END) + len(END)
        return page_text[:a] + section + page_text[b:]
    return page_text.rstrip("\n") + "\n\n" + section + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--parts", nargs="+", default=PARTS, choices=PARTS)
    ap.add_argument("--budget", type=float, default=285.0, help="seconds for every part")
    ap.add_argument("--smoke", action="store_true", help="toy sizes (a check, not a measurement)")
    a = ap.parse_args(argv)
    out = os.path.abspath(a.out_dir)
    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    records = run_parts(a.parts, out, a.smoke, a.budget)
    _drop_empty(os.path.join(out, "stacks"))   # the processes that were not asked
    # the 1M-user CPU row before its CUDA row, as bench_gpu puts a case's devices
    rows = _rows(out, "bench") + _rows(out, "large_cpu") + _rows(out, "large") + _rows(out, "huge")
    pyg_rows = _rows(out, "pyg")
    # the page names the output folder as the command line did, not this machine's path
    shown = ["$OUT" if x == a.out_dir else x.replace(a.out_dir, "$OUT") for x in argv]
    section = summary(records, rows, pyg_rows, shown, a.smoke)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(section + "\n")
    with open(PAGE) as f:
        page = f.read()
    with open(os.path.join(out, "performance.md"), "w") as f:
        f.write(with_section(page, section))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"machine": machine(), "parts": [{k: v for k, v in r.items() if k != "pytest"}
                                                   for r in records],
                   "rows": rows, "pyg": pyg_rows}, f, indent=1)
    with open(os.path.join(out, "pytest.txt"), "w") as f:
        f.write(_tail(next((r.get("pytest", "") for r in records if r["part"] == "tests"),
                           "(not run)"), 300) + "\n")
    with open(os.path.join(out, "parts.log"), "w") as f:
        for r in records:
            f.write(f"== {r['part']}: {r['status']} {r.get('why', '')} "
                    f"({r.get('seconds', 0):.0f} s)\n$ {r['command']}\n{r.get('output', '')}\n\n")
    print(section)
    print(f"[gpu_check: {time.monotonic() - t0:.0f} s; files in {out}]", file=sys.stderr)
    return records, rows, pyg_rows


if __name__ == "__main__":
    main()
