"""The performance page's figure, drawn from the page's own tables.

Three panels, each from a table of ``docs/performance/performance.md``:

* propagation on the CPU against a bare loop of its products (the table after
  ``<!-- figure: propagation -->``), float32 and float64, with the goal of 1.2x;
* skldp against the official codes (the table after ``<!-- figure: official -->``),
  with the goal of 5x;
* one GPU against the CPU rows of the same check (the rows of the GPU check's table,
  between its markers, that give a CPU / CUDA ratio), with the goal of 1x.

A figure drawn from the tables cannot disagree with them: after a GPU check has
replaced its section of the page, run this again. Needs matplotlib.

Usage::

    python benchmarks/plot_performance.py [--page docs/performance/performance.md]
        [--out docs/performance/performance.png]
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PAGE = os.path.join(ROOT, "docs", "performance", "performance.md")
FIGURE = os.path.join(ROOT, "docs", "performance", "performance.png")

_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def table_after(text, marker):
    """The first Markdown table after ``marker`` in ``text``, as a list of dicts."""
    if marker not in text:
        raise ValueError(f"the page has no {marker!r}")
    lines = text[text.index(marker) + len(marker):].lstrip("\n").split("\n")
    rows = []
    for line in lines:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    if len(rows) < 3:
        raise ValueError(f"no table after {marker!r}")
    header = rows[0]
    for r in rows[2:]:
        if len(r) != len(header):
            raise ValueError(f"a row of the table after {marker!r} has {len(r)} cells, its "
                             f"header {len(header)}: {' | '.join(r)}")
    return [dict(zip(header, r, strict=True)) for r in rows[2:]]


def numbers(cell):
    """The numbers of a cell before any bracket: ``"4.8×, 5.1×"`` -> [4.8, 5.1]."""
    cell = cell.split("(")[0]
    return [float(m.replace(",", "")) for m in _NUMBER.findall(cell)]


def propagation(text):
    """(steps, float32 ratios per step, float64 ratios per step)."""
    rows = table_after(text, "<!-- figure: propagation -->")
    steps = [r["step"].split("(")[0] for r in rows]
    f32 = [numbers(r["float32: ratio, two runs"]) for r in rows]
    f64 = [numbers(r["float64: ratio"]) for r in rows]
    return steps, f32, f64


def official(text):
    """(system and dataset, ratios) per row."""
    rows = table_after(text, "<!-- figure: official -->")
    names = [re.split(r",", r["system and dataset"])[0] for r in rows]
    return names, [numbers(r["ratio"]) for r in rows]


def gpu(text):
    """(case, CPU / CUDA ratio) of every CUDA row of the GPU check's table that has one."""
    sys.path.insert(0, HERE)
    from gpu_check import BEGIN, END
    if BEGIN not in text or END not in text:
        raise ValueError("the page has no GPU check section")
    block = text[text.index(BEGIN):text.index(END)]
    cases, ratios = [], []
    for row in table_after(block, "### On one GPU"):
        ratio = numbers(row.get("CPU / this device", ""))
        if row.get("device", "").startswith("cuda") and ratio:
            cases.append(row["case"])
            ratios.append(ratio[0])
    return cases, ratios


def _short(case):
    """A bar's label: the case without its settings (``1000000 users`` -> ``1M users``)."""
    case = re.sub(r"\(.*?\)", "", case)
    case = re.sub(r"(\d+)000000 users / \d+ edges", r"\1M users", case)
    case = re.sub(r" eps=1 (end to end|HDS reports)", "", case)
    case = case.replace("Classifier", "").replace("LinkPredictor", "").replace(" + MLPHead", "")
    parts = [p.strip() for p in case.split(",")]
    if len(parts) > 1 and " " not in parts[0]:   # "PPRPropagation, Facebook ..."
        return f"{parts[1]} {parts[0]}"
    return re.sub(r"\s+", " ", parts[0]).strip()


def _bars(ax, labels, values, goal, title, xlabel, log=False, at_most=False):
    """Horizontal bars (the mean of each row's values, their range as whiskers), green
    where the goal is met (``at_most``: at or below ``goal``; else at or above)."""
    import numpy as np
    y = np.arange(len(labels))
    mids = [float(np.mean(v)) for v in values]
    lo = [m - min(v) for m, v in zip(mids, values, strict=True)]
    hi = [max(v) - m for m, v in zip(mids, values, strict=True)]
    ok = [m <= goal if at_most else m >= goal for m in mids]
    ax.barh(y, mids, xerr=[lo, hi], color=["tab:green" if g else "tab:orange" for g in ok],
            capsize=2)
    ax.axvline(goal, color="black", linestyle="--", linewidth=1)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel, fontsize=9)
    if log:
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator([0.5, 1, 2, 5, 10, 20, 50, 100]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlim(min(0.5, min(min(v) for v in values) / 1.5),
                    max(max(v) for v in values) * 1.5)


def draw(text, out):
    """Draw the figure of the page ``text`` into the file ``out``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, f32, f64 = propagation(text)
    names, ratios = official(text)
    cases, speedups = gpu(text)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), gridspec_kw=dict(wspace=0.7))
    _bars(axes[0], [f"{s} float32" for s in steps] + [f"{s} float64" for s in steps],
          f32 + f64, 1.2, "CPU propagation / bare products (goal ≤ 1.2)", "ratio (one thread)",
          at_most=True)
    _bars(axes[1], names, ratios, 5.0, "official code / skldp (goal ≥ 5)",
          "wall-time ratio (one thread each)", log=True)
    _bars(axes[2], [_short(c) for c in cases], [[r] for r in speedups], 1.0,
          "CPU / one GPU (goal ≥ 1)", "speed-up of the card", log=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", default=PAGE)
    ap.add_argument("--out", default=FIGURE)
    args = ap.parse_args(argv)
    with open(args.page, encoding="utf-8") as f:
        draw(f.read(), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
