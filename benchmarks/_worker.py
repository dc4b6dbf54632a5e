"""Run one side of a side-by-side benchmark in a subprocess on a given source tree.

The worker prints one line ``RESULT <json>`` (:func:`emit`); the parent runs it with
``PYTHONPATH`` set to the source tree it measures (:func:`run_worker`), so that two
versions of skldp are timed alternately under the same load.
"""

import json
import subprocess
import sys

PREFIX = "RESULT "


def emit(result):
    """Print the worker's result for :func:`run_worker` to read."""
    print(PREFIX + json.dumps(result), flush=True)


def run_worker(cmd, src, env, preexec_fn=None):
    """Run ``cmd`` in ``src`` and return the result it emitted; exit if it failed."""
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=src,
                         preexec_fn=preexec_fn)
    line = [x for x in res.stdout.splitlines() if x.startswith(PREFIX)]
    if res.returncode or not line:
        sys.stderr.write(res.stderr[-3000:])
        raise SystemExit(f"worker on {src} failed (rc={res.returncode})")
    return json.loads(line[-1][len(PREFIX):])


def _better(old, new):
    """The smaller of two figures: seconds, or (wall, CPU) pairs compared item by item."""
    if old is None:
        return new
    if isinstance(new, (list, tuple)):
        return tuple(min(a, b) for a, b in zip(old, new, strict=True))
    return min(old, new)


def alternate(sources, run, repeat, keys=None):
    """Best figures of each source over ``repeat`` rounds, the sources taken in turn.

    ``run(src)`` returns a dict of figures (seconds, or (wall, CPU) pairs); ``keys``
    picks which are timings (default: every number or pair). Taking the sources
    alternately lets load from other processes hit them all. Returns one dict of best
    figures per source, and each source's last result.
    """
    best, last = [{} for _ in sources], [None] * len(sources)
    for _ in range(repeat):
        for i, src in enumerate(sources):
            res = last[i] = run(src)
            for k, v in res.items():
                timing = isinstance(v, (int, float)) or (
                    isinstance(v, (list, tuple)) and all(isinstance(x, (int, float)) for x in v))
                if (k in keys) if keys is not None else timing:
                    best[i][k] = _better(best[i].get(k), v)
            print(f"[{'baseline' if i < len(sources) - 1 else 'current'}: {res}]",
                  file=sys.stderr, flush=True)
    return best, last


def wall_and_cpu(v):
    """A (wall, CPU) pair of seconds as a table cell."""
    return f"{v[0]:.2f} / {v[1]:.2f}"


def before_after(best, steps, fmt=wall_and_cpu, digits=2):
    """Markdown table rows of :func:`alternate`'s figures: each step before and after,
    and their ratio (of the wall times), or the one source's figures alone."""
    if len(best) == 1:
        return ["| step | s |", "|---|---|"] + [f"| {k} | {fmt(best[0][k])} |" for k in steps]

    def wall(v):
        return v[0] if isinstance(v, (list, tuple)) else v
    rows = ["| step | before | after | before / after (wall) |", "|---|---|---|---|"]
    for k in steps:
        b, c = best[0].get(k), best[1][k]
        ratio = f"{wall(b) / wall(c):.{digits}f}×" if b is not None else "—"
        rows.append(f"| {k} | {'—' if b is None else fmt(b)} | {fmt(c)} | {ratio} |")
    return rows


def publish(lines, out=None):
    """Print the table (and write it to ``out``)."""
    table = "\n".join(lines)
    print(table)
    if out:
        with open(out, "w") as f:
            f.write(table + "\n")
