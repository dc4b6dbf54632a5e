"""Figures of the results pages: accuracy (or AUC) against epsilon, from a study's records.

Shared drawing helpers, and one function per page that draws
``fig_<page>.png`` from the study's records: the mean over seeds of each private
method against its epsilon, the raw-feature (non-private) model as a dashed line
and the feature-free (graph-only) model as a dotted line where the runs have them.
Needs matplotlib (``pip install -e ".[experiments]"``).
"""

import math
from collections import defaultdict

__all__ = ["flat_records", "flat", "mean_by", "group", "finite", "curve", "hline", "finish",
           "rgnn", "solitude"]
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def flat_records(records):
    return [flat(r) for r in records]


def flat(record):
    """A runner record with its settings (``params``) and ``acc`` at the top level, as the
    scripts' older records have them; fields already there win."""
    extra = dict(record.get("params") or {})
    metrics = record.get("metrics") or {}
    if "accuracy" in metrics:
        extra["acc"] = metrics["accuracy"]
    return {**extra, **record}


def mean_by(rows, key, scale=1.0):
    """Mean of ``row[key]`` per group: ``{group: mean}`` with rows already grouped."""
    return {g: scale * float(np.mean([r[key] for r in rs])) for g, rs in rows.items()}


def group(rows, *keys, where=lambda r: True):
    out = defaultdict(list)
    for r in rows:
        if where(r):
            out[tuple(r.get(k) for k in keys)].append(r)
    return out


def finite(v):
    return v is not None and not (isinstance(v, float) and math.isinf(v))


def curve(ax, points, **kw):
    """Plot {eps: value} sorted by eps."""
    eps = sorted(e for e in points if finite(e))
    if eps:
        ax.plot(eps, [points[e] for e in eps], **{"marker": "o", **kw})


def hline(ax, value, kind, label):
    if value is not None:
        style = {"raw": dict(ls="--", color="k"), "graph": dict(ls=":", color="gray")}[kind]
        ax.axhline(value, lw=1.2, label=label, **style)


def finish(fig, axes, path, ylabel, xlabel="ε"):
    for ax in np.ravel(axes):
        if not ax.has_data():
            ax.set_visible(False)
            continue
        ax.set_xscale("log")
        xs = sorted({float(x) for line in ax.get_lines() for x in line.get_xdata()
                     if line.get_marker() not in (None, "None", "")})
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    np.ravel(axes)[0].set_ylabel(ylabel)
    handles, labels = {}, []
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    fig.legend([handles[lab] for lab in labels], labels, loc="lower center",
               ncol=min(len(labels), 4), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04 + 0.04 * math.ceil(len(labels) / 4), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rgnn(records, pages_dir):
    # Records written by the runner (skldp.experiments) name the model "method" and keep
    # the accuracy and the budgets in "metrics" and "params".
    rows = [r if "model" in r else {**r, "model": r["method"], "acc": r["metrics"]["accuracy"],
                                    **r["params"]}
            for r in flat_records(records)]
    datasets = ["cora", "citeseer", "facebook", "german_rgnn", "student_rgnn"]
    fig, axes = plt.subplots(1, len(datasets), figsize=(16, 3.6))
    for ax, ds in zip(axes, datasets, strict=True):
        g = mean_by(group(rows, "model", "eps", "eps_y", where=lambda r, ds=ds: r["dataset"] == ds),
                  "acc")
        for model, ls in [("RGNN", "-"), ("GraphSAGE", "--")]:
            for eps, c in [(1.0, "C0"), (0.1, "C1")]:
                curve(ax, {ey: v for (m, e, ey), v in g.items() if m == model and e == eps},
                       color=c, ls=ls, label=f"{model}, ε = {eps:g} per feature")
        curve(ax, {ey: v for (m, e, ey), v in g.items() if m == "graph-only"},
               color="gray", ls=":", label="graph only (noisy labels, no feature)")
        ax.set_title(ds)
    for ax in axes:
        ax.set_xlabel("ε_y (labels)")
    return finish(fig, axes, Path(pages_dir) / "fig_rgnn.png", "test accuracy",
                  xlabel="ε_y (labels)")


def solitude(records, pages_dir):
    # Records written by the runner keep the budgets in "params", the accuracy in "metrics".
    rows = [r if "eps_a" in r else {**r, **r["params"], "acc": r["metrics"]["accuracy"]}
            for r in flat_records(records)]
    panels = [(ds, bb) for ds in ["cora", "citeseer"] for bb in ["gcn", "sage"]]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
    for ax, (ds, bb) in zip(axes, panels, strict=True):
        g = mean_by(group(rows, "method", "eps_a",
                         where=lambda r, ds=ds, bb=bb: r["dataset"] == ds and r["backbone"] == bb),
                  "acc")
        for m, c in [("base", "C0"), ("lpgnn", "C1"), ("solitude", "C2")]:
            curve(ax, {e: v for (mm, e), v in g.items() if mm == m}, color=c,
                   label={"base": "GNN on the received graph", "lpgnn": "LPGNN-style",
                          "solitude": "Solitude"}[m])
        curve(ax, {e: v for (mm, e), v in g.items() if mm == "graph_only"}, color="gray",
               ls=":", label="graph only (no feature)")
        ax.set_title(f"{ds}, {'GCN' if bb == 'gcn' else 'GraphSAGE'}")
    return finish(fig, axes, Path(pages_dir) / "fig_solitude.png", "test accuracy",
                  xlabel="ε_a (edges)")
