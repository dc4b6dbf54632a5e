"""The main job: PrivGE (HDS -> PPR -> MLP head) on a real graph, with its baselines.

``python -m skldp`` (or the ``skldp`` console script) runs, on the bundled
Cora and the random 50/25/25 split of [Li et al., CIKM 2024, §4.1] over 5 seeds,
four rows that differ only in what the propagation and the head are fed:

* private: ``HDSMechanism(eps, feature_range=(0, 1))`` -> ``PPRPropagation()``
  -> ``MLPHead()``; each user sends one HDS report of budget eps;
* non-private: the raw features -> the same propagation and head, no mechanism
  (the ceiling; the paper's non-private setting);
* graph-only: features that carry no information (i.i.d. uniform noise,
  independent of the labels) -> the same propagation and head: what the graph
  and the training labels give without any feature;
* feature-free: label propagation over the graph
  (:class:`skldp.baselines.LabelPropagationClassifier`, ``alpha=0.9`` fixed, no
  tuning), no feature and no budget.

It prints the test accuracy of each row (mean ± std over seeds), one line saying
whether the private pipeline beats the better feature-free row (graph-only or
label propagation) by more than 2 standard errors of the paired differences over
seeds, and the epsilon each user spent, from
:func:`skldp.accounting.privacy_report`.

The MLP head is fitted on the train and validation nodes together (75 %) with
``validation_fraction=1/3``, i.e. it trains on 50 % of the labelled nodes and
early-stops on 25 %, as in the paper; the test nodes' labels never reach
``fit``. Perturbation and propagation see all nodes (transductive protocol).
Label propagation is seeded with the same train and validation labels (75 %).

``python -m skldp reproduce <study>`` runs a registered study instead
(:mod:`skldp.experiments`).
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .utils._command import run_command

__all__ = ["main", "run"]

ROWS = {
    "private": "private       HDS -> PPR -> MLP head",
    "non-private": "non-private   raw features -> PPR -> MLP head (ceiling)",
    "graph-only": "graph-only    noise features -> PPR -> MLP head",
    "feature-free": "feature-free  label propagation (no features)",
}
GRAPH_ONLY = ("graph-only: uniform noise features, independent of the labels, so the row is what "
              "the graph and the training labels give without any feature.")

_DESCRIPTION = """\
PrivGE node classification with local DP on the node features: each user sends
one HDS report of budget --eps, the server propagates the reports over the graph
(personalised PageRank, PPR) and fits an MLP head. It prints the test accuracy
(%, mean ± std over random 50/25/25 splits) of four rows that differ only in
what PPR and the head are fed:

  private       HDS -> PPR -> MLP head
  non-private   the raw features, no mechanism: the ceiling
  graph-only    uniform noise features, independent of the labels: what the
                graph and the training labels give without any feature
  feature-free  label propagation over the graph: no features, no budget

then one line saying whether the private pipeline beats the better of the two
feature-free rows (graph-only, feature-free), is below it, or is within noise
(difference under 2 standard errors of the paired differences over seeds),
and the epsilon each user spent (from skldp.accounting.privacy_report)."""

_EPILOG = """\
This program is the PrivGE demo. The registered paper studies (sweeps over
datasets, pipelines, eps and seeds) run with
  {prog} reproduce <study> [--quick] [--n-jobs N] [--backend loky|dask|ray]
see {prog} reproduce --help. An error ends in one line; with SKLDP_TRACEBACK=1
in the environment it shows its traceback instead."""


def _prog():
    return "skldp" if Path(sys.argv[0]).name == "skldp" else "python -m skldp"


def _parse(argv):
    prog = _prog()
    p = argparse.ArgumentParser(prog=prog, description=_DESCRIPTION,
                                epilog=_EPILOG.format(prog=prog),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="cora",
                   help="dataset name (see skldp.datasets.list_datasets()); default: cora")
    p.add_argument("--eps", type=float, default=1.0,
                   help="per-user feature budget of HDS (default: 1; inf: HDS's encoding "
                        "without noise)")
    p.add_argument("--seeds", type=int, default=5,
                   help="number of random 50/25/25 splits / collections (default: 5)")
    p.add_argument("--epochs", type=int, default=100,
                   help="maximum training epochs of the MLP head (default: 100)")
    args = p.parse_args(argv)
    if args.seeds < 1:
        p.error("--seeds must be >= 1")
    if args.epochs < 1:
        p.error("--epochs must be >= 1")
    if not args.eps > 0:
        p.error("--eps must be > 0 (inf: HDS's encoding without noise)")
    return args


def run(dataset="cora", eps=1.0, seeds=5, epochs=100, out=None):
    """Run the main job and return ``{row: list of test accuracies}`` and the report.

    Parameters
    ----------
    dataset : str
        A name from :func:`skldp.datasets.list_datasets` with node features.
    eps : float
        HDS budget per user (``inf``: HDS's encoding without noise).
    seeds : int
        Number of random splits; seed ``s`` fixes the split, the collection
        and the head's initialisation.
    epochs : int
        Maximum epochs of the MLP head.
    out : file-like, default=sys.stdout
        Where progress lines are printed.

    Returns
    -------
    scores : dict of str -> list of float
        Accuracies per seed of the rows ``"private"``, ``"non-private"`` (raw
        features, no mechanism), ``"graph-only"`` and ``"feature-free"``.
    report : skldp.accounting.PrivacyReport
        The privacy report of the last fitted private pipeline.
    """
    scores, report, _ = _run(dataset, eps, seeds, epochs, out)
    return scores, report


def _run(dataset, eps, seeds, epochs, out):
    """:func:`run`, and the feature range given to HDS (``None``: read from the data)."""
    from sklearn.pipeline import Pipeline

    from . import GraphData
    from .accounting import privacy_report
    from .baselines import LabelPropagationClassifier
    from .datasets import load_dataset
    from .mechanisms import HDSMechanism
    from .model_selection import random_node_split
    from .models import MLPHead
    from .propagation import PPRPropagation

    out = out or sys.stdout
    bunch = load_dataset(dataset)
    G, y = bunch.data, bunch.target
    n, d = G.shape
    if d == 0:
        raise SystemExit(f"Dataset {dataset!r} has no node features; PrivGE privatises "
                         "features, so choose a dataset with features.")
    labelled = y >= 0
    # The dataset's public bounds ((0, 1) for binary features); None: read from the data
    # by HDS, with a PrivacyLeakWarning, charged as a read in the clear (epsilon inf).
    # Never chosen by looking at the users' values, which would be a read uncharged.
    feature_range = bunch.feature_range
    # Features with no information about the labels: uniform noise of the same
    # shape, drawn once (the graph-only row of every seed shares it).
    noise = np.random.default_rng(12345).uniform(-1.0, 1.0, size=(n, d)).astype(np.float32)
    G_noise = GraphData(noise, G.adjacency)

    def head(seed):
        return MLPHead(epochs=epochs, validation_fraction=1 / 3, random_state=seed)

    print(f"skldp {dataset}: {n} nodes, {d} features, {int(labelled.sum())} labelled; "
          f"random 50/25/25 splits, {seeds} seed(s)", file=out, flush=True)
    # Label propagation needs an undirected graph; a directed one is symmetrised.
    A = G.adjacency
    G_lp = G if G.is_symmetric() else G._with_new_adjacency(A.maximum(A.T))
    scores = {key: [] for key in ROWS}
    report = None
    t0 = time.perf_counter()
    for seed in range(seeds):
        train, val, test = random_node_split(y, 0.5, 0.25, 0.25, random_state=seed)
        fit = train | val
        private = Pipeline([("hds", HDSMechanism(eps=eps, feature_range=feature_range,
                                                 random_state=seed)),
                            ("ppr", PPRPropagation()), ("clf", head(seed))])
        # The propagation of the raw (and of the noise) features is the same at every seed:
        # computed once and reused from the graph's memo.
        raw = Pipeline([("ppr", PPRPropagation()), ("clf", head(seed))])
        graph_only = Pipeline([("ppr", PPRPropagation()), ("clf", head(seed))])
        # Each seed is a separate simulated deployment: new devices, an empty ledger.
        G_private = G.new_simulation()
        with warnings.catch_warnings():
            # Clipping notes on raw data only; a PrivacyLeakWarning still shows.
            warnings.filterwarnings("ignore", message=".*clipped to it", category=UserWarning)
            private.fit(G_private[fit], y[fit])
            scores["private"].append(private.score(G_private[test], y[test]))
        raw.fit(G[fit], y[fit])
        scores["non-private"].append(raw.score(G[test], y[test]))
        graph_only.fit(G_noise[fit], y[fit])
        scores["graph-only"].append(graph_only.score(G_noise[test], y[test]))
        lp = LabelPropagationClassifier(alpha=0.9).fit(G_lp[fit], y[fit])
        scores["feature-free"].append(lp.score(G_lp[test], y[test]))
        report = privacy_report(private)
        print(f"  seed {seed}: " + "  ".join(f"{k} {scores[k][-1]:.3f}" for k in ROWS)
              + f"  ({time.perf_counter() - t0:.0f}s)", file=out, flush=True)
    return scores, report, feature_range


def _epsilon_line(report, feature_range, seeds=1):
    """The budget line; with bounds read from the private data the report charges that read
    in the clear (epsilon inf), and the line gives HDS's own epsilon beside it. Each seed
    is a new simulated deployment (``new_simulation``): the line says what the same people
    would have spent in all of them."""
    line = f"epsilon spent per user: {report.local_epsilon:g}"
    if feature_range is None:
        hds = sum(s.epsilon for s in getattr(report, "spends", ()) if s.model == "local")
        line += (f", as the feature bounds were read from the data in the clear (the "
                 f"dataset's public bounds are unknown; HDS's reports alone: {hds:g})")
    line += " on the node features (HDS, local DP; from skldp.accounting.privacy_report)"
    if seeds > 1:
        line += (f", in each seed's run: each of the {seeds} seeds is a new simulated "
                 f"deployment, so one person in all of them would have spent "
                 f"{seeds * report.local_epsilon:g}")
    return line


def _verdict(private, floor, floor_name):
    """One line: does ``private`` beat ``floor`` (accuracies over the same seeds)?

    The seeds are paired (same split), so the noise is the standard error of the
    per-seed differences; a difference under 2 standard errors is "within noise".

    Parameters
    ----------
    private, floor : sequence of float
        Accuracies of the private pipeline and of the feature-free row, per seed.
    floor_name : str
        Name of the feature-free row.

    Returns
    -------
    line : str
    """
    p, f = np.asarray(private) * 100, np.asarray(floor) * 100
    diff = p - f
    n, mean = len(diff), float(diff.mean())
    values = f"{p.mean():.1f} vs {f.mean():.1f} %"
    if n < 2:
        return (f"private vs the better feature-free row ({floor_name}): {values}, a difference "
                f"of {mean:+.1f} points on 1 seed: run --seeds 3 or more to tell it from noise.")
    se = float(diff.std(ddof=1)) / math.sqrt(n)
    spread = f"{mean:+.1f} ± {se:.1f} points (standard error over {n} paired seeds)"
    if abs(mean) <= 2 * se:
        return (f"private is within noise of the better feature-free row ({floor_name}): "
                f"{values}, difference {spread}, under 2 standard errors.")
    word = "beats" if mean > 0 else "is below"
    return f"private {word} the better feature-free row ({floor_name}): {values}, {spread}."


def main(argv=None):
    """Entry point of ``python -m skldp`` and of the ``skldp`` console script.

    ``python -m skldp reproduce <study> [--quick] [--n-jobs N] [--backend B]``
    runs a registered study instead (see :mod:`skldp.experiments`).

    A user error (an unknown or unavailable dataset, a damaged runs file) ends
    with a one-line message and status 1 (``SKLDP_TRACEBACK=1`` shows its
    traceback instead), Ctrl-C with status 130.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    return run_command(_main, argv, "skldp")


def _main(argv):
    if argv and argv[0] == "reproduce":
        # before torch is imported: waiting OpenMP threads sleep instead of spinning,
        # so a sweep sharing its CPUs with other jobs is not slowed tenfold
        from .utils._threads import passive_waiting
        passive_waiting()
        from .experiments._cli import reproduce_main
        return reproduce_main(argv[1:])
    args = _parse(argv)
    t0 = time.perf_counter()
    scores, report, feature_range = _run(args.dataset, args.eps, args.seeds, args.epochs,
                                         sys.stdout)
    print(f"test accuracy (%), mean ± std over {args.seeds} seed(s):")
    for key, label in ROWS.items():
        s = np.asarray(scores[key]) * 100
        print(f"  {label:<58} {s.mean():5.1f} ± {s.std():4.1f}")
    print(GRAPH_ONLY)
    floor = max(("graph-only", "feature-free"), key=lambda k: np.mean(scores[k]))
    print(_verdict(scores["private"], scores[floor],
                   {"graph-only": "graph-only", "feature-free": "label propagation"}[floor]))
    print(_epsilon_line(report, feature_range, args.seeds))
    print(f"total time {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
