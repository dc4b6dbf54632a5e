"""The main job: PrivGE (HDS -> PPR -> MLP head) on a real graph, with baselines.

``python -m skldp`` (or the ``skldp`` console script) runs, on the bundled
Cora and the random 50/25/25 split of [Li et al., CIKM 2024, §4.1] over 5 seeds::

    Pipeline([("hds", HDSMechanism(eps=1, feature_range=(0, 1))),
              ("ppr", PPRPropagation()),
              ("clf", MLPHead())])

and prints the test accuracy (mean ± std over seeds) of

* the private pipeline (each user sends one HDS report of budget eps),
* a graph-only baseline: the same propagation and head on features that
  carry no information (i.i.d. uniform noise, independent of the labels),
* the non-private baseline (eps = inf: the scaled features, unperturbed),
* a feature-free baseline: label propagation over the graph
  (:class:`skldp.baselines.LabelPropagationClassifier`, ``alpha=0.9`` fixed, no
  tuning), which uses no feature at all; private features help only where the
  private pipeline beats it,

and the epsilon each user spent, from :func:`skldp.accounting.privacy_report`.

The MLP head is fitted on the train and validation nodes together (75 %) with
``validation_fraction=1/3``, i.e. it trains on 50 % of the labelled nodes and
early-stops on 25 %, as in the paper; the test nodes' labels never reach
``fit``. Perturbation and propagation see all nodes (transductive protocol).
Label propagation is seeded with the same train and validation labels (75 %).
"""

import argparse
import sys
import time
import warnings

import numpy as np

__all__ = ["main", "run"]


def _parse(argv):
    p = argparse.ArgumentParser(
        prog="python -m skldp",
        description="PrivGE (HDS -> PPR -> MLP) node classification with local DP on node "
                    "features, against a graph-only, a non-private and a feature-free (label "
                    "propagation) baseline.",
        epilog="Sweeps: python -m skldp reproduce <study> [--quick] [--n-jobs N] "
               "[--backend loky|dask|ray] (python -m skldp reproduce --help).")
    p.add_argument("--dataset", default="cora",
                   help="dataset name (see skldp.datasets.list_datasets()); default: cora")
    p.add_argument("--eps", type=float, default=1.0,
                   help="per-user feature budget of HDS (default: 1)")
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
        p.error("--eps must be > 0 (use inf for no privacy)")
    return args


def _feature_range(X):
    """(0, 1) for binary bag-of-words data; ``None`` (bounds from the data, with a
    PrivacyLeakWarning) for raw numeric data, whose public bounds we do not know."""
    data = X.data if hasattr(X, "data") and not isinstance(X, np.ndarray) else X
    if np.size(data) == 0 or (np.min(data) >= 0 and np.max(data) <= 1):
        return (0.0, 1.0)
    return None


def run(dataset="cora", eps=1.0, seeds=5, epochs=100, out=None):
    """Run the main job and return ``{name: list of test accuracies}`` and the report.

    Parameters
    ----------
    dataset : str
        A name from :func:`skldp.datasets.list_datasets` with node features.
    eps : float
        HDS budget per user (``inf`` = no perturbation).
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
    report : skldp.accounting.PrivacyReport
        The privacy report of the last fitted private pipeline.
    """
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
    feature_range = _feature_range(G.features)
    # Features with no information about the labels: uniform noise of the same
    # shape, drawn once (the graph-only baseline of every seed shares it).
    noise = np.random.default_rng(12345).uniform(-1.0, 1.0, size=(n, d)).astype(np.float32)
    G_noise = GraphData(noise, G.adjacency)

    def head(seed):
        return MLPHead(epochs=epochs, validation_fraction=1 / 3, random_state=seed)

    print(f"skldp {dataset}: {n} nodes, {d} features, {int(labelled.sum())} labelled; "
          f"random 50/25/25 splits, {seeds} seed(s); HDS eps={eps:g}", file=out, flush=True)
    # Label propagation needs an undirected graph; a directed one is symmetrised.
    A = G.adjacency
    G_lp = G if G.is_symmetric() else G.with_adjacency(A.maximum(A.T))
    scores = {"private": [], "graph-only": [], "non-private": [], "feature-free": []}
    report = None
    t0 = time.perf_counter()
    for seed in range(seeds):
        train, val, test = random_node_split(y, 0.5, 0.25, 0.25, random_state=seed)
        fit = train | val
        private = Pipeline([("hds", HDSMechanism(eps=eps, feature_range=feature_range,
                                                 random_state=seed)),
                            ("ppr", PPRPropagation()), ("clf", head(seed))])
        # eps = inf with k = d: every user's full scaled feature vector, unperturbed.
        # A fixed random_state keeps it identical over seeds, so the propagation is
        # computed once and reused from the graph's memo.
        clear = Pipeline([("hds", HDSMechanism(eps=np.inf, k=d, feature_range=feature_range,
                                               random_state=0)),
                          ("ppr", PPRPropagation()), ("clf", head(seed))])
        graph_only = Pipeline([("ppr", PPRPropagation()), ("clf", head(seed))])
        # Each seed is a separate simulated deployment: new devices, an empty ledger.
        G_private = G.new_simulation()
        with warnings.catch_warnings():
            # Clipping notes on raw data only; a PrivacyLeakWarning still shows.
            warnings.filterwarnings("ignore", message=".*clipped to it", category=UserWarning)
            private.fit(G_private[fit], y[fit])
            scores["private"].append(private.score(G_private[test], y[test]))
            graph_only.fit(G_noise[fit], y[fit])
            scores["graph-only"].append(graph_only.score(G_noise[test], y[test]))
            clear.fit(G[fit], y[fit])
            scores["non-private"].append(clear.score(G[test], y[test]))
        lp = LabelPropagationClassifier(alpha=0.9).fit(G_lp[fit], y[fit])
        scores["feature-free"].append(lp.score(G_lp[test], y[test]))
        report = privacy_report(private)
        print(f"  seed {seed}: private {scores['private'][-1]:.3f}  graph-only "
              f"{scores['graph-only'][-1]:.3f}  non-private {scores['non-private'][-1]:.3f}  "
              f"feature-free {scores['feature-free'][-1]:.3f}  "
              f"({time.perf_counter() - t0:.0f}s)", file=out, flush=True)
    return scores, report


def main(argv=None):
    """Entry point of ``python -m skldp`` and of the ``skldp`` console script.

    ``python -m skldp reproduce <study> [--quick] [--n-jobs N] [--backend B]``
    runs a registered study instead (see :mod:`skldp.experiments`).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "reproduce":
        # before torch is imported: waiting OpenMP threads sleep instead of spinning,
        # so a sweep sharing its CPUs with other jobs is not slowed tenfold
        from .utils._threads import passive_waiting
        passive_waiting()
        from .experiments._cli import reproduce_main
        return reproduce_main(argv[1:])
    args = _parse(argv)
    t0 = time.perf_counter()
    scores, report = run(args.dataset, args.eps, args.seeds, args.epochs)
    labels = {"private": f"PrivGE (HDS eps={args.eps:g})",
              "graph-only": "graph-only baseline",
              "non-private": "non-private (eps=inf)",
              "feature-free": "feature-free (label prop.)"}
    print(f"test accuracy, mean ± std over {args.seeds} seed(s):")
    for key, label in labels.items():
        s = np.asarray(scores[key]) * 100
        print(f"  {label:<26} {s.mean():5.1f} ± {s.std():4.1f} %")
    eps_user = report.local_epsilon
    print(f"epsilon spent per user: {eps_user:g} (protects features; "
          f"from skldp.accounting.privacy_report)")
    print(str(report))
    print(f"total time {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
