"""The feature-free row of the results pages: what the graph alone gives, on each page's split.

Node classification: ``LabelPropagationClassifier`` (Zhou et al., NIPS 2004) with
alpha in {0.5, 0.8, 0.9, 0.99} chosen on the *validation* nodes of the split (never on
the test nodes); with private labels (the LPGNN label-LDP columns) the training labels
are randomized by ``LabelRandomizedResponse(eps_y)`` inside the classifier and alpha is
chosen on the validation labels randomized by the same collection (no clean label is
used to choose). Link prediction: common neighbours, Adamic-Adar and resource
allocation scores over the training graph (validation and test edges removed), the
score chosen on the validation pairs' AUC, reported as test AUC.

Splits are the pages' own: ``random_node_split(y, 0.5, 0.25, 0.25, seed)`` (PrivGE,
LPGNN pipeline), the Planetoid public split (LPGNN Table 2), and
``random_edge_split(G, seed)`` (85/5/10, link prediction), and the Solitude page's
randomized graph (``EdgeRR(eps_a)`` as in ``reproduce_solitude.py``, label propagation
over it). Seeds 0-4.

Usage::

    SKLDP_DATASETS_DIR=... python scripts/feature_free_rows.py [link] [node] [solitude]
"""

import os
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from skldp import GraphData  # noqa: E402
from skldp.baselines import LabelPropagationClassifier  # noqa: E402
from skldp.datasets import load_dataset  # noqa: E402
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse, MultiBitMechanism  # noqa: E402
from skldp.model_selection import (  # noqa: E402
    planetoid_split,
    random_edge_split,
    random_node_split,
)

ALPHAS = [0.5, 0.8, 0.9, 0.99]
SEEDS = range(5)


def _fmt(a):
    return f"{100 * np.mean(a):.1f} ± {100 * np.std(a):.1f} (n={len(a)})"


def lp_accuracy(G, y, tr, va, te, eps_y=None, seed=0):
    """Test accuracy of label propagation, alpha chosen on (noisy if eps_y) validation labels."""
    best = None
    for alpha in ALPHAS:
        mech = None if eps_y is None else LabelRandomizedResponse(
            eps_y, classes=np.unique(y[y >= 0]), random_state=seed)
        lp = LabelPropagationClassifier(alpha, label_mechanism=mech).fit(G[tr], y[tr])
        y_va = y[va] if mech is None else lp.label_mechanism_.randomize(
            y[va], G[va])
        score = float(np.mean(lp.predict(G[va]) == y_va))
        if best is None or score > best[0]:
            best = (score, alpha, lp)
    return float(best[2].score(G[te], y[te])), best[1]


def node_rows():
    for name in ["cora", "citeseer", "facebook"]:
        b = load_dataset(name)
        G, y = b.data, b.target
        for eps_y in [None, 1.0, 2.0, 3.0]:
            accs, alphas = [], []
            for seed in SEEDS:
                tr, va, te = random_node_split(y, 0.5, 0.25, 0.25, random_state=seed)
                a, al = lp_accuracy(G, y, tr, va, te, eps_y, seed)
                accs.append(a)
                alphas.append(al)
            print(f"node 50/25/25 | {name} | eps_y={eps_y} | label propagation | "
                  f"{_fmt(accs)} | alphas {alphas}", flush=True)
        if name in ("cora", "citeseer"):
            tr, va, te = planetoid_split(b)
            a, al = lp_accuracy(G, y, tr, va, te)
            print(f"node planetoid | {name} | label propagation | {100 * a:.1f} (one split, "
                  f"deterministic) | alpha {al}", flush=True)


def _solitude_graph(name):
    """The Solitude page's graph: symmetric 0/1, no self loops; CiteSeer's largest component."""
    b = load_dataset(name)
    G, y = b.data, np.asarray(b.target)
    A = sp.csr_matrix(G.adjacency)
    A = ((A + A.T) > 0).astype(np.float32)
    A.setdiag(0)
    A.eliminate_zeros()
    X = G.features
    if name == "citeseer":
        _, comp = sp.csgraph.connected_components(A, directed=False)
        keep = np.flatnonzero(comp == np.bincount(comp).argmax())
        A, X, y = A[keep][:, keep], X[keep], y[keep]
    return GraphData(X, sp.csr_matrix(A)), y


def solitude_rows():
    """Label propagation over the *randomized* graph (edge LDP at eps_a), as the Solitude page."""
    for name in ["cora", "citeseer"]:
        G, y = _solitude_graph(name)
        cells = []
        for eps_a in [7.0, 7.3, 7.5, 7.7, 7.9, 8.0]:
            accs = []
            for seed in SEEDS:
                tr, va, te = random_node_split(y, random_state=seed)
                # the page's exact randomized graph (same mechanisms and seeds)
                Gx = MultiBitMechanism(1.0, feature_range=(0, 1),
                                       random_state=seed).fit_transform(G)
                Gn = EdgeRR(eps_a, symmetrize="directed", random_state=1000 + seed
                            ).fit_transform(Gx)
                A = sp.csr_matrix(Gn.adjacency)
                # the reports are directed; label propagation needs an undirected graph
                # (post-processing: an edge if either endpoint reported it)
                Gs = GraphData(Gn.features, A.maximum(A.T))
                accs.append(lp_accuracy(Gs, y, tr, va, te)[0])
            cells.append(_fmt(accs))
        print(f"solitude | {name} | label propagation on the randomized graph | "
              + " | ".join(cells), flush=True)


def _scores(A, pairs):
    """Common neighbours, Adamic-Adar and resource allocation of node pairs (sparse)."""
    A = sp.csr_matrix(A, dtype=np.float64)
    A.data[:] = 1.0
    deg = np.asarray(A.sum(axis=1)).ravel()
    u, v = pairs[:, 0], pairs[:, 1]
    out = {}
    for name, w in [("common neighbours", np.ones_like(deg)),
                    ("Adamic-Adar", 1.0 / np.log(np.maximum(deg, 2.0))),
                    ("resource allocation", 1.0 / np.maximum(deg, 1.0))]:
        AW = A @ sp.diags(w)
        out[name] = np.asarray(AW[u].multiply(A[v]).sum(axis=1)).ravel()
    return out


def link_rows():
    for name in ["cora", "citeseer", "facebook"]:
        G = load_dataset(name).data
        aucs, chosen = [], []
        per_score = {}
        for seed in SEEDS:
            P_tr, P_va, P_te, _, y_va, y_te = random_edge_split(G, random_state=seed)
            A = P_tr.graph.adjacency
            s_va, s_te = _scores(A, P_va.pairs), _scores(A, P_te.pairs)
            va_auc = {k: roc_auc_score(y_va, s) for k, s in s_va.items()}
            best = max(va_auc, key=va_auc.get)
            aucs.append(roc_auc_score(y_te, s_te[best]))
            chosen.append(best)
            for k, s in s_te.items():
                per_score.setdefault(k, []).append(roc_auc_score(y_te, s))
        print(f"link 85/5/10 | {name} | structural (chosen on validation AUC) | {_fmt(aucs)} | "
              f"{chosen} | " + "; ".join(f"{k} {_fmt(v)}" for k, v in per_score.items()),
              flush=True)


if __name__ == "__main__":
    import sys
    warnings.simplefilter("ignore")
    parts = sys.argv[1:] or ["link", "node"]
    if "link" in parts:
        link_rows()
    if "node" in parts:
        node_rows()
    if "solitude" in parts:
        solitude_rows()
