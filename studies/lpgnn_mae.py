"""The LPGNN MAE study (Sajadmanesh & Gatica-Perez, CCS 2021): Figure 2 and Figure 3.

For each dataset, budget ``eps`` in {1, 3, 5, 7, 9} (per feature, as in the paper)
and mechanism (LM, PM, PGC), one collection of all nodes' features is perturbed,
aggregated with the first-layer graph convolution estimator (the paper's eq. (4),
:class:`~skldp.propagation.GCNAggregation`) and compared with the aggregation of
the true features: the per-node mean absolute error (eq. (8)) averaged over all
nodes, the RMSE over nodes and features, their predictions from the mechanisms'
variance formulas, and (at ``eps = 1``) the MAE by node degree. Each seed is an
independent collection. No split: every node is used. :func:`write_page` writes
the page ``docs/results/lpgnn_mae.md`` and its figure from the runs.
"""

import functools
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from skldp.experiments import Grid, Method, Study

__all__ = ["lpgnn_mae_study", "MAERun", "EPSILONS", "MECHANISMS", "DATASETS", "write_page",
           "main_table", "details", "figure"]

DATASETS = ("cora", "citeseer", "twitch_ENGB", "facebook")
EPSILONS = [1, 3, 5, 7, 9]
MECHANISMS = ("LM", "PM", "PGC")
BY_DEGREE_EPS = 1
_TRUTH = {}  # per process: dataset -> (aggregation, true aggregate, degrees, binary)


def all_nodes(y, seed):
    """No split: every node (one mask of all nodes, twice empty).

    Parameters
    ----------
    y : ndarray of shape (n_nodes,)
    seed : int

    Returns
    -------
    masks : tuple of three boolean ndarrays
    """
    n = len(y)
    return np.ones(n, bool), np.zeros(n, bool), np.zeros(n, bool)


def make_mechanism(name, eps, d, seed):
    """The paper's per-feature budget: PGC = OneBit(eps), LM = Laplace(eps d), PM = PM(eps d, k=d).

    Parameters
    ----------
    name : {"LM", "PM", "PGC"}
    eps : int or float
        Budget per feature.
    d : int
        Number of features.
    seed : int

    Returns
    -------
    mechanism : estimator
    """
    from skldp.mechanisms import LaplaceMechanism, OneBitMechanism, PiecewiseMechanism
    if name == "PGC":
        return OneBitMechanism(eps=eps, feature_range=(0, 1), random_state=seed)
    if name == "LM":
        return LaplaceMechanism(eps=eps * d, feature_range=(0, 1), random_state=seed)
    if name == "PM":
        return PiecewiseMechanism(eps=eps * d, k=d, feature_range=(0, 1), random_state=seed)
    raise ValueError(f"mechanism must be one of {MECHANISMS}, got {name!r}.")


def predictions(mech, G, agg):
    """MAE and RMSE predicted from the variance formulas (binary features).

    The estimate is unbiased, so ``E[err_vi^2] = Var * sum_u P_vu^2`` exactly;
    ``mean_v E|err| = sqrt(2/pi * that)`` holds only if the error is normal.

    Returns
    -------
    gaussian_mae, rmse : float
    """
    P = agg.propagation_matrix(G)
    s2 = np.asarray(P.multiply(P).sum(axis=1)).ravel()
    var = float(mech.variance(0.0)[0])  # = variance(1.0) for these three at binary x
    return (float(np.mean(np.sqrt(2.0 / np.pi * var * s2))), float(np.sqrt(np.mean(var * s2))))


def rmse(T, E):
    """Root mean squared error over all nodes and features, in row blocks."""
    n, d = T.shape
    step = max(1, (1 << 22) // d)
    total = 0.0
    for s in range(0, n, step):
        Tb = T[s:s + step]
        Tb = Tb.toarray() if sp.issparse(Tb) else Tb
        Eb = E[s:s + step]
        Eb = Eb.toarray() if sp.issparse(Eb) else Eb
        total += float(((Tb - Eb) ** 2).sum())
    return float(np.sqrt(total / (n * d)))


def _truth(dataset, G):
    if dataset not in _TRUTH:
        from skldp.propagation import GCNAggregation
        X = G.features
        lo = min(X.data.min(), 0.0) if sp.issparse(X) else X.min()
        if lo < 0 or X.max() > 1:
            raise ValueError(f"{dataset}: features outside [0, 1]; scale them first.")
        binary = bool(np.all(np.isin(X.data if sp.issparse(X) else X, [0.0, 1.0])))
        agg = GCNAggregation().fit(G)
        _TRUTH.clear()  # one dataset at a time (the aggregate is large)
        _TRUTH[dataset] = (agg, agg.transform(G).features, np.diff(G.adjacency.indptr), binary)
    return _TRUTH[dataset]


class MAERun(BaseEstimator):
    """One collection: perturb every node's features, aggregate, compare with the truth.

    Parameters
    ----------
    mechanism : {"LM", "PM", "PGC"}, default="PGC"
        The mechanism (``make_mechanism``).
    eps : float, default=1
        Budget per feature.
    dataset : str, default="cora"
        Dataset name (its true aggregate is computed once per process).
    random_state : int, default=0
        Seed of the collection.
    """

    def __init__(self, mechanism="PGC", eps=1, dataset="cora", random_state=0):
        self.mechanism = mechanism
        self.eps = eps
        self.dataset = dataset
        self.random_state = random_state

    def run(self, G):
        """The errors of one collection.

        Parameters
        ----------
        G : GraphData
            The whole graph (features in [0, 1]).

        Returns
        -------
        metrics : dict of str -> float
            ``mae``, ``rmse``, ``xbar``, ``n``, ``d``; for binary features the
            predictions ``gaussian_pred`` and ``rmse_pred``; at ``eps = 1`` the
            MAE by degree ``mae_deg_<k>`` for degrees up to the 99 % quantile
            ``deg_q99``.
        """
        from skldp import GraphData
        from skldp.metrics import aggregation_mae, mae_by_degree

        from .link_prediction import as_recorded
        # The truth and the predictions are the evaluator's, computed on a copy of the
        # data held by other simulated devices: they are not part of what G's users send.
        evaluator = GraphData(G.features, G.adjacency)
        agg, true, degree, binary = _truth(self.dataset, evaluator)
        n, d = G.shape
        eps = as_recorded(self.eps)
        mech = make_mechanism(self.mechanism, eps, d, self.random_state)
        est = agg.transform(mech.fit(G).transform(G)).features
        mae_v = aggregation_mae(true, est)
        out = {"mae": float(mae_v.mean()), "rmse": rmse(true, est),
               "xbar": float(G.features.sum() / (n * d)), "n": float(n), "d": float(d)}
        if binary:
            out["gaussian_pred"], out["rmse_pred"] = predictions(mech, evaluator, agg)
        if eps == BY_DEGREE_EPS:
            dmax = int(np.quantile(degree, 0.99))
            degs, m = mae_by_degree(mae_v, degree, max_degree=dmax)
            out["deg_q99"] = float(dmax)
            out.update({f"mae_deg_{int(k)}": float(v) for k, v in zip(degs, m, strict=True)})
        self.mechanism_ = mech
        return out


def evaluate(estimator, G, y, masks):
    """Run one collection (no model, no split).

    Parameters
    ----------
    estimator : MAERun
    G : GraphData
    y : ndarray
        Labels (unused).
    masks : tuple
        Unused (every node counts).

    Returns
    -------
    metrics : dict of str -> float
    """
    return estimator.run(G)


def _make(name, ctx):
    return MAERun(mechanism=name, dataset=ctx.dataset, random_state=ctx.seed)


def lpgnn_mae_study(datasets=DATASETS, seeds=range(5)):
    """The MAE sweep of the PGC/LPGNN paper's Figure 2 (and a Figure 3 style table).

    Parameters
    ----------
    datasets : sequence of str, default=DATASETS
        Datasets with features in [0, 1].
    seeds : sequence of int, default=range(5)
        Seeds (independent collections).

    Returns
    -------
    study : Study
    """
    unknown = [d for d in datasets if d not in DATASETS]
    if unknown:
        raise ValueError(f"lpgnn_mae runs on {list(DATASETS)} only, not {unknown}.")
    methods = {m: Method(functools.partial(_make, m), {"eps": EPSILONS}, evaluate=evaluate,
                         label=f"{m} + GCN aggregation") for m in MECHANISMS}
    return Study(
        name="lpgnn_mae", datasets=list(datasets), seeds=seeds, methods=methods,
        splits={"all-nodes": all_nodes}, metric="mae", scale=1.0, digits=4,
        title="LPGNN / PGC: MAE of the graph-convolution estimate (Figure 2)",
        description="Mean absolute error of the first-layer GCN aggregation of the reports "
                    "against that of the true features (eps per feature; one collection of "
                    "all nodes per seed).",
        quick={"datasets": ["cora"], "seeds": [0],
               "grid": {m: [Grid({"eps": [1]})] for m in MECHANISMS}},
    )


make_study = lpgnn_mae_study   # the registry's name (studies.get_study)


# ------------------------------------------------------------------------------ the page
PAGE = "lpgnn_mae.md"
FIGURE = "fig_lpgnn_mae.png"
# The paper's Table 3 (mean feature value after scaling to [0, 1]).
PAPER_XBAR = {"cora": 0.013, "citeseer": 0.009, "twitch_ENGB": 0.008, "facebook": None}
# What the paper's §5.1 states about Figure 2 (the figure's numbers are not in the text).
PAPER_CLAIM = {
    "cora": "PGC < PM < LM at every eps; MAE decreases with eps",
    "citeseer": "PGC < PM < LM at every eps; MAE decreases with eps",
    "twitch_ENGB": "PGC < PM < LM at every eps (paper: Twitch UK, 2,545 features)",
    "facebook": "not in the PGC/LPGNN paper",
}
DEGREES_SHOWN = (1, 2, 3, 5, 10, 20, 50)


def _cells(records):
    """``{(dataset, mechanism, eps): [metrics of each seed]}``."""
    out = {}
    for r in records:
        out.setdefault((r["dataset"], r["method"], float(r["params"]["eps"])), []).append(
            r["metrics"])
    return out


def _fmt(vals):
    vals = np.asarray(vals, dtype=float)
    if len(vals) == 1:
        return f"{vals[0]:.4f}"
    return f"{vals.mean():.4f} ± {vals.std():.4f}"


def _datasets(cells):
    return [d for d in DATASETS if any(k[0] == d for k in cells)]


def main_table(records):
    """The MAE of each mechanism per dataset and eps (mean ± std over collections).
    """
    cells = _cells(records)
    lines = ["Mean absolute error of the aggregated estimate (eq. (8), averaged over all "
             "nodes), mean ± std over independent collections (n = collections per cell); "
             "budget ε per feature.", "",
             "| dataset | ε | LM | PM | PGC | order | n |", "|---|---|---|---|---|---|---|"]
    for name in _datasets(cells):
        for eps in EPSILONS:
            row, means, n = [], {}, set()
            for m in MECHANISMS:
                sel = cells.get((name, m, float(eps)), [])
                n.add(len(sel))
                if sel:
                    means[m] = np.mean([x["mae"] for x in sel])
                row.append(_fmt([x["mae"] for x in sel]) if sel else "—")
            order = " < ".join(sorted(means, key=means.get)) if len(means) == 3 else "—"
            lines.append(f"| {name} | {eps} | " + " | ".join(row)
                         + f" | {order} | {'/'.join(str(k) for k in sorted(n))} |")
    return "\n".join(lines)


def details(records):
    """Per dataset: the MAE beside its Gaussian prediction, the RMSE beside its exact
    prediction, and the MAE by node degree at eps = 1.
    """
    cells = _cells(records)
    lines = []
    for name in _datasets(cells):
        first = next(v[0] for k, v in cells.items() if k[0] == name)
        seeds = sorted({r["seed"] for r in records if r["dataset"] == name})
        xb = PAPER_XBAR[name]
        lines += [f"### {name} (n = {int(first['n'])}, d = {int(first['d'])}, mean x = "
                  f"{first['xbar']:.4f}" + (f"; paper Table 3: {xb})" if xb else ")"), "",
                  f"Paper (§5.1): {PAPER_CLAIM[name]}. Seeds: {len(seeds)}.", "",
                  "| ε | " + " | ".join(f"{m} MAE | {m} Gauss. pred." for m in MECHANISMS)
                  + " |", "|---" * (2 * len(MECHANISMS) + 1) + "|"]
        for key, pred in (("mae", "gaussian_pred"), ("rmse", "rmse_pred")):
            if key == "rmse":
                lines += ["", "RMSE over nodes and features against its exact prediction from "
                          "the variance formulas:", "",
                          "| ε | " + " | ".join(f"{m} RMSE | {m} pred." for m in MECHANISMS)
                          + " |", "|---" * (2 * len(MECHANISMS) + 1) + "|"]
            for eps in EPSILONS:
                row = [str(eps)]
                for m in MECHANISMS:
                    sel = cells.get((name, m, float(eps)), [])
                    p = [x[pred] for x in sel if pred in x]
                    row += [_fmt([x[key] for x in sel]) if sel else "—",
                            f"{p[0]:.4f}" if p else "—"]
                lines.append("| " + " | ".join(row) + " |")
        by = {m: cells.get((name, m, float(BY_DEGREE_EPS)), []) for m in MECHANISMS}
        if all(by.values()) and all("deg_q99" in x for v in by.values() for x in v):
            dmax = int(by["PGC"][0]["deg_q99"])
            shown = sorted({k for k in DEGREES_SHOWN if k <= dmax} | {dmax})
            lines += ["", f"MAE by node degree at ε = {BY_DEGREE_EPS} (Figure 3 of the paper; "
                      f"degrees up to the 99 % quantile, {dmax}), mean over the collections:",
                      "", "| degree | " + " | ".join(MECHANISMS) + " |",
                      "|---" * (len(MECHANISMS) + 1) + "|"]
            for k in shown:
                vals = [[x[f"mae_deg_{k}"] for x in by[m] if f"mae_deg_{k}" in x]
                        for m in MECHANISMS]
                lines.append(f"| {k} | " + " | ".join(f"{np.mean(v):.4f}" if v else "—"
                                                      for v in vals) + " |")
        lines.append("")
    wall = sum(r.get("wall_s") or 0.0 for r in records) / 60
    cpu = sum(r.get("cpu_s") or 0.0 for r in records) / 60
    lines.append(f"Compute of the {len(records)} recorded runs: {wall:.1f} min of wall time, "
                 f"{cpu:.1f} min of CPU time (one thread per run).")
    return "\n".join(lines)


def figure(records, pages_dir):
    """``fig_lpgnn_mae.png``: the MAE against eps, one panel per dataset (log scales).
    """
    import matplotlib.pyplot as plt

    from .figures import curve, finish
    cells = _cells(records)
    names = _datasets(cells)
    fig, axes = plt.subplots(1, len(names), figsize=(3.4 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for i, m in enumerate(MECHANISMS):
            curve(ax, {e: float(np.mean([x["mae"] for x in v]))
                       for (d, mm, e), v in cells.items() if d == name and mm == m},
                  color=f"C{i}", label=f"{m} reports, GCN aggregation")
        ax.set_yscale("log")
        ax.set_title(name)
    return finish(fig, axes[0], Path(pages_dir) / FIGURE, "MAE (mean over nodes)",
                  xlabel="ε per feature")


def write_page(records, pages_dir, runs_file=None, partial=None):
    """This study's page and figure from its runs (``studies.write_page``)."""
    from .pages import command_block, fill_blocks, with_figure
    pages_dir = Path(pages_dir)
    page = fill_blocks(pages_dir / PAGE, {
        "table": main_table(records),
        "figure": f"![MAE of the aggregated estimate against ε per feature, one panel per "
                  f"dataset (log scales)]({FIGURE})",
        "command": command_block("lpgnn_mae", len(records), runs_file=runs_file,
                                 partial=partial),
        "details": details(records),
    })
    return with_figure(page, lambda: figure(records, pages_dir))
