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
           "lpgnn", "link_prediction", "dpgnn"]
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


def lpgnn(records, pages_dir):
    runs = flat_records(records)
    rows = [r for r in runs if r["part"] == "table2"]
    lpg = [r for r in runs if r["part"] == "lpgnn"]
    fig, axes = plt.subplots(1, 5, figsize=(16, 3.6), sharey=False)
    for ax, ds in zip(axes[:2], ["cora", "citeseer"], strict=True):
        g = mean_by(group(rows, "method", "eps", where=lambda r, ds=ds: r["dataset"] == ds), "acc")
        for m, c in [("LM", "C0"), ("PM", "C1"), ("PGC", "C2")]:
            curve(ax, {e: v for (mm, e), v in g.items() if mm == m}, color=c,
                   label=f"GCN on {m} reports")
        hline(ax, g.get(("RAW", None)), "raw", "raw features")
        hline(ax, g.get(("GRAPH-ONLY", None)), "graph", "graph only")
        ax.set_title(f"Table 2, {ds}")
    for ax, ds in zip(axes[2:], ["cora", "citeseer", "facebook"], strict=True):
        g = mean_by(group(lpg, "method", "eps_x", "eps_y",
                         where=lambda r, ds=ds: r["dataset"] == ds), "acc")
        for i, ey in enumerate([1.0, 2.0, 3.0]):
            curve(ax, {ex: v for (m, ex, eyy), v in g.items() if m == "LPGNN" and eyy == ey},
                   color=f"C{i + 3}", label=f"LPGNN, ε_y = {ey:g}")
            curve(ax, {ex: v for (m, ex, eyy), v in g.items()
                        if m == "LPGNN-AUTHORS" and eyy == ey},
                   color=f"C{i + 3}", ls="-.", marker="s",
                   label=f"LPGNN, authors' code (the defaults), ε_y = {ey:g}")
            graph = g.get(("GRAPH-ONLY", None, ey))
            if graph is not None:
                ax.axhline(graph, ls=":", color=f"C{i + 3}", lw=1.2,
                           label=f"graph only, ε_y = {ey:g}")
        ax.set_title(f"LPGNN, {ds}")
        ax.set_xlabel("ε_x")
    return finish(fig, axes, Path(pages_dir) / "fig_lpgnn.png", "test accuracy")


def link_prediction(records, pages_dir):
    # The main runs only: the ablations (non-default loss or negative ratio) are reported apart.
    rows = [r for r in flat_records(records)
            if "loss" not in r and "negative_ratio" not in r]
    panels = [("000", "cora"), ("000", "citeseer"), ("002", "cora"), ("002", "facebook")]
    colors = {m: f"C{i}" for i, m in enumerate(["LM", "PM", "PGC", "LP", "MB", "HDS"])}
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
    for ax, (paper, ds) in zip(axes, panels, strict=True):
        g = mean_by(group(rows, "method", "eps",
                         where=lambda r, p=paper, ds=ds: r["paper"] == p and r["dataset"] == ds),
                  "auc")
        for m in sorted({m for m, e in g if finite(e)}):
            curve(ax, {e: v for (mm, e), v in g.items() if mm == m}, color=colors[m],
                   label=f"{m} reports")
        raw = g.get(("RAW", None), g.get(("inf", None)))
        hline(ax, raw, "raw", "raw features")
        hline(ax, g.get(("GRAPH", None)), "graph", "graph only")
        ax.set_title(f"{'LPGNN (VGAE)' if paper == '000' else 'PrivGE (Hadamard)'}, {ds}")
    return finish(fig, axes, Path(pages_dir) / "fig_link_prediction.png", "test ROC-AUC (%)")


def dpgnn(records, pages_dir):
    rows = flat_records(records)
    datasets = ["facebook", "twitch_ENGB"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, ds in zip(axes, datasets, strict=True):
        g = mean_by(group(rows, "method", "eps",
                         where=lambda r, ds=ds: r["dataset"] == ds and r.get("table") == "main"),
                  "test", 100)
        for m, c in [("DP-GNN", "C0"), ("DP-MLP", "C1")]:
            curve(ax, {e: v for (mm, e), v in g.items() if mm == m}, color=c, label=m)
        for m, c in [("GCN (1-layer, MLP enc/dec)", "C0"), ("MLP", "C1")]:
            if (m, None) in g:
                ax.axhline(g[m, None], ls="--", color=c, lw=1.2, label=f"{m}, non-private")
        hline(ax, g.get(("label propagation (feature-free)", None)), "graph",
               "label propagation (graph only)")
        ax.set_title(ds)
    return finish(fig, axes, Path(pages_dir) / "fig_dpgnn.png", "test accuracy (%)",
                  xlabel="node-level ε")
