"""The prepared GPU check (issue 33): one command, one GPU, at most five minutes.

Runs, each part in its own process with its own time limit, within one
overall budget (``--budget``, 285 s), in this order:

1. ``cpu`` (with a GPU): the CPU's rows of every ``bench_gpu.py`` case (those of
   ``bench`` and ``large`` below), in the background on half of the CPUs (whole
   cores, the card hidden), while parts 2-5 run on the other half: the CPU rows
   and the card's rows use different resources, and measured one after the
   other they took most of the five minutes;
2. ``bench``: every case of ``bench_gpu.py`` on CUDA (on the CPU when there is no
   GPU): PPR on Facebook's HDS reports, Facebook PrivGE end to end, LPGNN on
   Facebook, every model on Cora;
3. ``pyg``: ``bench_pyg.py``, skldp's GCNClassifier beside PyTorch Geometric's
   GCN on Cora and CiteSeer (Planetoid public split);
4. ``large``: PrivGE at 1M users / 10M edges on CUDA (on the CPU when there is
   no GPU);
5. ``huge``: PrivGE at 10M users / 100M edges on CUDA (the graph drawn on the
   card);
6. ``tests``: once part ``cpu`` has ended, the test suite, every torch model on
   CUDA through ``device="auto"`` (``pytest -n <CPUs, at most 16>`` when
   pytest-xdist is installed, each worker with its share of the CPUs' threads,
   the tests marked ``long`` handed out first), with the time the parts before
   left it; every test of a second or more is listed with its time;
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
``pytest.txt`` (the test run's output, with every test of a second or more timed)
and ``parts.log`` (each part's command, time and last lines of output); with a GPU
also the profiles above.

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
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PAGE = os.path.join(ROOT, "docs", "performance", "performance.md")
BEGIN, END = "<!-- gpu-check:begin -->", "<!-- gpu-check:end -->"

# part -> (seconds it may take at most, the least worth starting it with)
LIMITS = {"cpu": (170, 40), "bench": (110, 30), "pyg": (60, 15), "large": (60, 15),
          "huge": (120, 40), "tests": (180, 30), "profile": (60, 25)}
# parts that only make sense beside a GPU (without one, "bench" and "large" run on the CPU)
GPU_ONLY = {"cpu"}
# parts that run in the background, beside the parts after them, until a part of JOINS
BESIDE = {"cpu"}
JOINS = {"tests", "profile"}
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


def _core(cpu):
    """The core of logical CPU ``cpu`` (its package and core ids; the CPU itself where
    Linux does not say): hyperthreads of one core share it."""
    topo = f"/sys/devices/system/cpu/cpu{cpu}/topology"
    try:
        with open(f"{topo}/physical_package_id") as f, open(f"{topo}/core_id") as g:
            return (f.read().strip(), g.read().strip())
    except OSError:
        return (cpu,)


def cpu_halves(cpus=None, core=_core):
    """This process's CPUs (``cpus``) in two halves of whole cores: (the CPU rows',
    the card's parts'); None when there are fewer than two cores."""
    from skldp.utils._threads import _affinity
    cores = {}
    for c in sorted(_affinity() if cpus is None else cpus):
        cores.setdefault(core(c), []).append(c)
    groups = list(cores.values())
    if len(groups) < 2:
        return None
    half = len(groups) // 2
    return ([c for g in groups[:half] for c in g], [c for g in groups[half:] for c in g])


def _start(cmd, env, cpus=None, background=False):
    """Start ``cmd`` (SIGINT as by default: a shell's background job inherits it ignored),
    on ``cpus`` when given. A ``background`` part writes to temporary files (no one reads
    its pipes while it runs: a full pipe would stop it)."""
    def setup():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if cpus:
            os.sched_setaffinity(0, cpus)
    out = tempfile.TemporaryFile("w+") if background else subprocess.PIPE
    err = tempfile.TemporaryFile("w+") if background else subprocess.PIPE
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err, text=True,
                            preexec_fn=setup)
    proc.files = (out, err) if background else None
    return proc


def _communicate(proc, timeout):
    """``proc.communicate``, reading a background part's files."""
    if proc.files is None:
        return proc.communicate(timeout=timeout)
    proc.wait(timeout=timeout)
    texts = []
    for f in proc.files:
        f.seek(0)
        texts.append(f.read())
        f.close()
    return tuple(texts)


def commands(out, smoke, gpu=None):
    """The command of each part (``out``: the output folder; ``gpu``: whether there is
    one, asked of torch when None)."""
    gpu = _has_gpu() if gpu is None else gpu
    device = "cuda" if gpu else "cpu"
    py = sys.executable
    bench = [py, os.path.join(HERE, "bench_gpu.py")] + (["--tiny"] if smoke else [])
    if smoke:
        tests = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 os.path.join(ROOT, "tests", "utils", "test_adjacency.py")]
    else:
        # every test of a second or more listed (--durations): where the time goes on the card
        tests = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "--durations=0",
                 "--durations-min=1"]
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
                          "--json", os.path.join(out, "_bench.json"), "--profile-dir", out,
                          "--devices", device],
        "profile": bench + ["--cases", "profile", "--profile-dir", out],
        "pyg": [py, os.path.join(HERE, "bench_pyg.py"), "--json", os.path.join(out, "_pyg.json")]
        + (["--seeds", "2", "--epochs", "3", "--datasets", "cora"] if smoke else ["--seeds", "5"]),
        "large": bench + ["--cases", "large", "--json", os.path.join(out, "_large.json"),
                          "--profile-dir", out, "--devices", device]
        + (["--large-nodes", "2000"] if smoke else []),
        # the CPU's rows of parts bench and large, beside them
        "cpu": bench + ["--cases", "ppr", "hds_columns", "privge", "models", "large",
                        "--json", os.path.join(out, "_cpu.json"), "--devices", "cpu"]
        + (["--large-nodes", "2000"] if smoke else []),
        "huge": bench + ["--cases", "huge", "--json", os.path.join(out, "_huge.json")]
        + (["--huge-nodes", "3000"] if smoke else []),
    }


def _tail(text, n=40):
    return "\n".join(text.splitlines()[-n:])


def run_parts(parts, out, smoke, budget):
    """Run ``parts`` in order within ``budget`` seconds; one record per part.

    With a GPU, a part of :data:`BESIDE` runs in the background on one half of the
    CPUs while the parts after it run on the other, until one of :data:`JOINS`,
    which waits for it first (or the end).
    """
    gpu = _has_gpu()
    cmds = commands(out, smoke, gpu)
    # the parts run this checkout's skldp, whatever is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    deadline = time.monotonic() + budget
    halves = cpu_halves() if gpu else None
    records, behind = [], None   # behind: (record, process, start) of the background part
    for name in parts:
        if behind is not None and name in JOINS:
            _finish(*behind, deadline)
            behind = None
        limit, least = LIMITS[name]
        left = deadline - time.monotonic()
        extra = part_env(name, smoke)
        cpus = None
        if name in BESIDE and halves:
            cpus = halves[0]
            # its own threads on its own CPUs, and no card: the CPU's rows
            extra.update(OMP_NUM_THREADS=str(len(cpus)), CUDA_VISIBLE_DEVICES="")
        elif behind is not None:
            cpus = halves[1]
            extra["OMP_NUM_THREADS"] = str(len(cpus))
        if name == "tests":   # where the suite waits, if it runs out of time
            extra["SKLDP_STACKS_DIR"] = os.path.join(out, "stacks")
            os.makedirs(extra["SKLDP_STACKS_DIR"], exist_ok=True)
        rec = {"part": name, "command": " ".join(
            [f"{k}={v}" for k, v in extra.items()] + cmds[name])}
        if cpus:
            rec["cpus"] = len(cpus)
        records.append(rec)
        if name in GPU_ONLY and not gpu:
            rec.update(status="not run", why="no GPU")
            continue
        if name in BESIDE and not halves:
            rec.update(status="not run", why="fewer than two cores")
            continue
        if left < least:
            rec.update(status="not run", why=f"{left:.0f} s left of the {budget:.0f} s budget")
            continue
        t0 = time.monotonic()
        proc = _start(cmds[name], dict(env, **extra), cpus, background=name in BESIDE)
        if name in BESIDE:
            behind = (rec, proc, t0)
            continue
        _finish(rec, proc, t0, deadline, extra.get("SKLDP_STACKS_DIR"))
    if behind is not None:
        _finish(*behind, deadline)
    return records


def _finish(rec, proc, t0, deadline, stacks=None):
    """Wait for part ``rec`` (its process ``proc``, started at ``t0``) within its own limit
    and the budget's ``deadline``; record its status, output and time. ``stacks``: the
    folder where the part's processes write their stacks if it runs out of time."""
    name = rec["part"]
    limit = LIMITS[name][0]
    wait = min(t0 + limit, deadline) - time.monotonic()
    try:
        stdout, stderr = _communicate(proc, max(1.0, wait - GRACE))
        rec["status"] = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        if stacks:
            rec["stacks"] = dump_stacks(proc.pid, stacks)
        # interrupted, not killed: pytest then prints its summary, with the tests that
        # failed so far and the slowest ones
        proc.send_signal(signal.SIGINT)
        try:
            stdout, stderr = _communicate(proc, GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = _communicate(proc, None)
        rec["status"] = "timed out"
    rec["output"] = _tail(stdout + "\n" + stderr)
    if name == "tests":
        rec["pytest"] = stdout
    rec["seconds"] = time.monotonic() - t0
    print(f"[{name}: {rec['status']}, {rec['seconds']:.0f} s]", file=sys.stderr, flush=True)


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


def by_case(rows):
    """``rows`` with each case's rows together, in the order the cases first come (the
    CPU's rows come first: a case's CPU row then stays before its card's)."""
    first = {}
    for r in rows:
        first.setdefault(r["case"], len(first))
    return sorted(rows, key=lambda r: first[r["case"]])


def _beside(records):
    """A sentence on where the CPU's rows ran, when part ``cpu`` ran them beside the card's."""
    rec = next((r for r in records if r["part"] == "cpu" and "seconds" in r), None)
    mine = next((r.get("cpus") for r in records if r["part"] != "cpu" and r.get("cpus")), None)
    if rec is None or not rec.get("cpus"):
        return []
    return [f"The CPU rows ran on {rec['cpus']} of the machine's CPUs (whole cores, "
            f"`OMP_NUM_THREADS={rec['cpus']}`), in part `cpu`, beside the card's parts "
            f"(`bench`, `pyg`, `large`, `huge`), which ran on the other {mine}.", ""]


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
        lines += _beside(records)
        table = _table(rows, ["(parts cpu, bench, large, huge)"], "", 0.0).split("\n")
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
    rows = by_case(_rows(out, "cpu") + _rows(out, "bench") + _rows(out, "large")
                   + _rows(out, "huge"))
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
        f.write(next((r.get("pytest", "") for r in records if r["part"] == "tests"),
                     "(not run)") + "\n")
    with open(os.path.join(out, "parts.log"), "w") as f:
        for r in records:
            f.write(f"== {r['part']}: {r['status']} {r.get('why', '')} "
                    f"({r.get('seconds', 0):.0f} s)\n$ {r['command']}\n{r.get('output', '')}\n\n")
    print(section)
    print(f"[gpu_check: {time.monotonic() - t0:.0f} s; files in {out}]", file=sys.stderr)
    return records, rows, pyg_rows


if __name__ == "__main__":
    main()
