"""Summaries of a study's records: mean ± std tables (Markdown) and a figure."""

import itertools
import json
import logging
import math
import os
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..utils._atomic import replace_file, replace_text
from ._study import _key_number

__all__ = ["summarize", "summary_markdown", "plot_summary", "write_summary"]

logger = logging.getLogger("skldp.experiments")


def _fmt_num(v):
    if v is None:
        return "—"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:g}" if isinstance(v, (int, float)) else str(v)


def _eps_of(params):
    """The declared eps of a run: the grid value named ``eps`` or ``*__eps``."""
    for k, v in params.items():
        if k == "eps" or k.endswith("__eps"):
            return v
    return None


def _is_number(eps):
    """Whether a declared eps is a number (not a bool, not NaN) that a figure can place."""
    return (isinstance(eps, (int, float)) and not isinstance(eps, bool)
            and not math.isnan(eps))


def _eps_order(eps):
    """Sort key of a declared eps: numbers ascending (inf last of them), then other
    values, then none (a row without eps)."""
    if _is_number(eps):
        return (0, float(eps))
    return (2, 0.0) if eps is None else (1, 0.0)


def summarize(records, metric="accuracy"):
    """Group runs by setting (all but the seed) and give mean, std and n of a metric.

    Parameters
    ----------
    records : list of dict
        Records of a runs file.
    metric : str, default="accuracy"
        The metric to summarise.

    Returns
    -------
    rows : list of dict
        One row per (dataset, method, split, grid values), with ``mean``,
        ``std`` (population std, as numpy), ``n``, ``seeds``, ``eps``
        (declared) and ``eps_spent`` (from ``privacy_report``: the local
        epsilon plus that of central trainings, as ``total_epsilon``; the
        largest over the seeds). Datasets, methods and splits come in first-seen
        order; the rows of one (dataset, method, split) by declared eps,
        ascending with inf last, then those without eps; rows of equal eps
        (other grid values) in first-seen order.

    Raises
    ------
    ValueError
        A record with the metric but without ``dataset`` and ``method``
        strings, or whose ``params`` is not a dict.
    """
    groups = OrderedDict()
    for r in records:
        if metric not in r.get("metrics", {}):
            continue
        for name in ("dataset", "method"):
            if not isinstance(r.get(name), str):
                raise ValueError(f"record {r.get('key')!r} has no {name!r} string: a summary "
                                 "groups the runs by dataset and method.")
        if not isinstance(r.get("params", {}), dict):
            raise ValueError(f"record {r.get('key')!r}: its 'params' is {r['params']!r}, "
                             "not a dict.")
        # grouped as the runner keys them: {"alpha": 1} and {"alpha": 1.0} are one setting
        key = (r["dataset"], r["method"], r.get("split", ""),
               json.dumps({k: _key_number(v) for k, v in r.get("params", {}).items()},
                          sort_keys=True))
        g = groups.setdefault(key, {"dataset": r["dataset"], "method": r["method"],
                                    "split": r.get("split", ""),
                                    "params": r.get("params", {}), "values": [],
                                    "seeds": [], "eps_spent": []})
        g["values"].append(float(r["metrics"][metric]))
        g["seeds"].append(r.get("seed"))
        if r.get("eps_spent") is not None:
            # the record's eps_spent is the local epsilon; a central DP training (DP-GNN,
            # DP-MLP) adds its epsilon to every user's total (PrivacyReport.total_epsilon)
            privacy = r.get("privacy")
            central = privacy.get("central_epsilon") if isinstance(privacy, dict) else None
            g["eps_spent"].append(float(r["eps_spent"]) + float(central or 0.0))
    rows = []
    for g in groups.values():
        v = np.asarray(g.pop("values"))
        spent = g.pop("eps_spent")
        rows.append({**g, "mean": float(v.mean()), "std": float(v.std()), "n": len(v),
                     "eps": _eps_of(g["params"]),
                     "eps_spent": max(spent) if spent else None})
    first = {}   # first-seen position of each dataset, its methods and their splits
    for r in rows:
        for key in ((r["dataset"],), (r["dataset"], r["method"]),
                    (r["dataset"], r["method"], r["split"])):
            first.setdefault(key, len(first))
    rows.sort(key=lambda r: (first[r["dataset"],], first[r["dataset"], r["method"]],
                             first[r["dataset"], r["method"], r["split"]],
                             _eps_order(r["eps"])))
    return rows


def summary_markdown(rows, *, scale=100.0, digits=1, labels=None):
    """Markdown table of :func:`summarize` rows, one section per dataset.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`summarize`.
    scale : float, default=100.0
        Factor applied to the metric (100: percent).
    digits : int, default=1
        Decimals of mean and std.
    labels : dict of str -> str or None, default=None
        Display names of methods.

    Returns
    -------
    text : str
    """
    labels = labels or {}
    out = []
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        out += [f"### {ds}", "", "| method | split | settings | mean ± std | n | ε spent |",
                "|---|---|---|---|---|---|"]
        for r in rows:
            if r["dataset"] != ds:
                continue
            settings = ", ".join(f"{k}={_fmt_num(v)}" for k, v in r["params"].items()) or "—"
            out.append(f"| {labels.get(r['method'], r['method'])} | {r['split']} | {settings} | "
                       f"{r['mean'] * scale:.{digits}f} ± {r['std'] * scale:.{digits}f} | "
                       f"{r['n']} | {_fmt_num(r['eps_spent'])} |")
        out.append("")
    return "\n".join(out)


def plot_summary(rows, path, *, roles=None, labels=None, metric="accuracy", scale=100.0):
    """Figure of the metric against eps, one panel per dataset (and split, where a
    dataset has several).

    Private methods are curves over their finite eps (error bars: std over
    seeds); their eps = inf runs and the methods whose role is a baseline
    (``raw-features``, ``feature-free``, ``baseline``) are horizontal lines.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`summarize`.
    path : str or path-like
        Where the PNG is written.
    roles : dict of str -> str or None, default=None
        Role of each method (:class:`Method` ``role``).
    labels : dict of str -> str or None, default=None
        Display names of methods.
    metric : str, default="accuracy"
        Axis label.
    scale : float, default=100.0
        Factor applied to the metric.

    Returns
    -------
    path : pathlib.Path or None
        The figure, or ``None`` when matplotlib is not installed. It is
        replaced whole: a failure leaves the old figure as it was.

    Raises
    ------
    ValueError
        A private method's row with eps <= 0, which the logarithmic eps axis
        cannot hold (nothing is drawn).
    """
    return save_figure(_draw(rows, roles, labels, metric, scale), path)


def _draw(rows, roles, labels, metric, scale):
    """The matplotlib figure of :func:`plot_summary`, or None without matplotlib."""
    roles, labels = roles or {}, labels or {}
    # (such a point was left off the log axis without a word)
    off_axis = [r for r in rows if roles.get(r["method"], "private") == "private"
                and _is_number(r["eps"]) and r["eps"] <= 0]
    if off_axis:
        r = off_axis[0]
        raise ValueError(
            f"{len(off_axis)} row(s) of private methods have eps <= 0 (e.g. "
            f"{labels.get(r['method'], r['method'])!r} on {r['dataset']!r} at eps = "
            f"{r['eps']:g}): the figure's eps axis is logarithmic and holds eps > 0 only "
            "(inf: a horizontal line). Drop those records, or give the method a baseline "
            "role.")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.info("matplotlib is not installed: no figure")
        return None
    # one panel per dataset, or per dataset and split where a dataset has several splits
    panels = list(dict.fromkeys((r["dataset"], r.get("split", "")) for r in rows))
    n_splits = {ds: sum(d == ds for d, _ in panels) for ds, _ in panels}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6),
                             squeeze=False)
    # cycled: a study may draw more reference lines than there are styles
    styles = itertools.cycle(["--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1))])
    style_of, color_of, curve_color = {}, {}, {}
    # reference lines in dark colours, apart from the curves' default cycle
    colors = itertools.cycle(["black", "dimgray", "saddlebrown", "darkgreen", "navy", "purple",
                              "darkred", "olive"])
    for ax, (ds, split) in zip(axes[0], panels, strict=True):
        mine = [r for r in rows if r["dataset"] == ds and r.get("split", "") == split]
        finite = [r["eps"] for r in mine if _is_number(r["eps"])
                  and math.isfinite(r["eps"]) and r["eps"] > 0]
        for m in dict.fromkeys(r["method"] for r in mine):
            rs = [r for r in mine if r["method"] == m]
            name = labels.get(m, m)
            curve = sorted((r for r in rs if _is_number(r["eps"]) and math.isfinite(r["eps"])
                            and roles.get(m, "private") == "private"), key=lambda r: r["eps"])
            if curve:
                ax.errorbar([r["eps"] for r in curve], [r["mean"] * scale for r in curve],
                            yerr=[r["std"] * scale for r in curve], marker="o", capsize=3,
                            label=name,   # one colour per method in every panel
                            color=curve_color.setdefault(name, f"C{len(curve_color) % 10}"))
            flat = [(f"{name} (ε = ∞)", r) for r in rs
                    if _is_number(r["eps"]) and math.isinf(r["eps"])]
            if roles.get(m, "private") != "private":
                flat += [(name, r) for r in rs]
            for text, r in flat:
                ls = style_of.setdefault(text, next(styles))
                color = "gray" if "∞" in text else color_of.setdefault(text, next(colors))
                ax.axhline(r["mean"] * scale, ls=ls, color=color, label=text)
                if r["std"] and finite:
                    ax.axhspan((r["mean"] - r["std"]) * scale, (r["mean"] + r["std"]) * scale,
                               alpha=0.08, color=color)
        if finite:
            ax.set_xscale("log")
            ticks = sorted(set(finite))
            ax.set_xticks(ticks, [f"{e:g}" for e in ticks])
            ax.minorticks_off()
        ax.set_title(ds if n_splits[ds] == 1 else f"{ds} ({split})")
        ax.set_xlabel("ε per user")
        ax.set_ylabel(f"{metric} (%)" if scale == 100 else metric)
        if len(panels) == 1:
            ax.legend(fontsize=7)
    fig.tight_layout()
    if len(panels) > 1:   # one legend for every panel, below them
        seen = {}
        for ax in axes[0]:
            for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(text, handle)
        fig.legend(list(seen.values()), list(seen), loc="upper center", fontsize=8,
                   bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(seen)), frameon=False)
    return fig


def save_figure(fig, path, then=None, *, dpi=110, bbox_inches="tight"):
    """Write ``fig`` (closed after) as the PNG ``path`` through a new file renamed over
    it, calling ``then()`` once the new file is whole and before the rename: a
    failure in either leaves the old figure. Returns ``path``, None without ``fig``.

    The one figure writer of the summaries and of the paper studies (``studies/``);
    ``dpi`` and ``bbox_inches`` go to ``savefig``."""
    if fig is None:
        if then is not None:
            then()
        return None
    import matplotlib.pyplot as plt
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.realpath(path)   # a link's target is replaced
        try:
            old = os.stat(target)
        except FileNotFoundError:
            old = None

        def write(tmp):
            with open(tmp, "xb") as f:
                fig.savefig(f, format="png", dpi=dpi, bbox_inches=bbox_inches)
                f.flush()
                os.fsync(f.fileno())
            if then is not None:
                then()

        if not replace_file(target, write, like=old):
            # another user's figure (a shared folder): rewritten in place, keeps its owner
            fig.savefig(target, format="png", dpi=dpi, bbox_inches=bbox_inches)
    finally:
        plt.close(fig)
    return path


def write_summary(study, records, results_dir, *, command=None):
    """Write ``<name>_summary.md`` and ``<name>.png`` of a study into ``results_dir``.

    Parameters
    ----------
    study : Study
        The study (methods' roles and labels, metric, title, description).
    records : list of dict
        Its records.
    results_dir : str or path-like
        Output folder.
    command : str or None, default=None
        The command that produced the runs (quoted in the page).

    Returns
    -------
    paths : dict of str -> pathlib.Path
        ``"markdown"`` and (when drawn) ``"figure"``.

    Raises
    ------
    ValueError
        Records of which none has the study's ``metric``, or a private
        method's record with eps <= 0 (:func:`plot_summary`); nothing is
        written.

    Notes
    -----
    When ``records`` hold fewer of the study's runs than it declares, the page
    says so ("k of the study's n runs").
    """
    results_dir = Path(results_dir)
    rows = summarize(records, study.metric)
    if records and not rows:
        # (a typo in Study.metric gave a page with an empty table and no figure)
        found = sorted({str(m) for r in records if isinstance(r.get("metrics"), dict)
                        for m in r["metrics"]})
        raise ValueError(f"Study {study.name!r}: none of its {len(records)} records has its "
                         f"metric {study.metric!r} (they have {found}); the summary is not "
                         "written. Set Study.metric to one of them.")
    labels = {m: (meth.label or m) for m, meth in study.methods.items()}
    roles = {m: meth.role for m, meth in study.methods.items()}
    scale = getattr(study, "scale", 100.0)
    drawn = _draw(rows, roles, labels, study.metric, scale) if rows else None
    try:
        fig = results_dir / f"{study.name}.png" if drawn is not None else None
        lines = [f"# {study.title or study.name}", ""]
        if study.description:
            lines += [study.description.strip(), ""]
        unit = " (%)" if scale == 100 else ""
        lines += [f"{study.metric}{unit}, mean ± std over seeds (n = seeds recorded); ε spent "
                  "per user from `privacy_report`. Runs: "
                  f"`{study.name}_runs.jsonl` ({len(records)} records).", ""]
        keys = {r.get("key") for r in records}
        runs = [s.key for s in study.runs()]
        done = sum(key in keys for key in runs)
        if done < len(runs):
            lines += [f"**Partial results: {done} of the study's {len(runs)} runs are "
                      "recorded**; the tables show those only.", ""]
        if command:
            lines += ["Produced by:", "", "```", command, "```", ""]
        if fig is not None:
            lines += [f"![{study.metric} against ε]({fig.name})", ""]
        lines.append(summary_markdown(rows, scale=scale, digits=getattr(study, "digits", 1),
                                      labels=labels))
        md = results_dir / f"{study.name}_summary.md"
        md.parent.mkdir(parents=True, exist_ok=True)
        # Each file is replaced whole, the figure last: its new file is written first, then
        # the summary, then the figure renamed over the old one. A failure up to that rename
        # (a full disk, an unwritable summary) leaves the old figure beside the old summary.
        save_figure(drawn, fig, then=lambda: replace_text(md, "\n".join(lines) + "\n"))
    except BaseException:   # not left open by a failure before save_figure (which closes it)
        if drawn is not None:
            import matplotlib.pyplot as plt
            plt.close(drawn)
        raise
    out = {"markdown": md}
    if fig is not None:
        out["figure"] = fig
    return out
