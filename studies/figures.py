"""Drawing helpers of the results pages' figures (accuracy or AUC against epsilon).

Each study module draws its page's figure from its records with these: the mean
over seeds of each private method against its epsilon (:func:`curve`), the
raw-feature (non-private) model as a dashed line and the feature-free model as a
dotted line (:func:`hline`). Needs matplotlib (``pip install -e ".[experiments]"``).
"""

import math
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from skldp.experiments._summary import save_figure  # noqa: E402

__all__ = ["flat_records", "flat", "mean_by", "group", "finite", "curve", "hline", "finish"]


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
    # replaced whole: a failure midway leaves the old figure (no truncated PNG)
    return save_figure(fig, path, bbox_inches=None)


