"""
=====================================================
Link prediction with locally private node features
=====================================================

Each user of a graph keeps its features private and sends a locally
differentially private report; the server knows the graph. We split the
edges 85/5/10 (the held-out edges are removed from the graph the models see),
then predict links two ways:

* PrivGE [Li et al., CIKM 2024]: HDS reports -> personalised PageRank propagation ->
  Hadamard edge features -> logistic regression;
* LPGNN [Sajadmanesh & Gatica-Perez, arXiv 2020]: one-bit PGC reports -> a variational graph
  auto-encoder with a two-layer GCN encoder.

Samples are node pairs (:class:`~skldp.model_selection.PairData`), labels are
1 for edges and 0 for sampled non-edges, and ``score`` is the ROC-AUC.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.pipeline import Pipeline

from skldp.datasets import load_cora
from skldp.mechanisms import HDSMechanism, OneBitMechanism
from skldp.model_selection import random_edge_split
from skldp.models import HadamardLinkPredictor, VGAELinkPredictor
from skldp.propagation import PPRPropagation

torch.set_num_threads(1)
G = load_cora().data
P_train, P_val, P_test, y_train, y_val, y_test = random_edge_split(G, random_state=0)
# The models fit the training and validation pairs together; ``validation=P_val.pairs``
# holds the latter out of the loss and stops training on them.
P_fit, y_fit = P_train.concat(P_val), np.r_[y_train, y_val]
print(P_train)
print("held-out test edges:", int(y_test.sum()), "- non-edges:", int((y_test == 0).sum()))
print("edges the models see:", P_train.graph.adjacency.nnz // 2, "of", G.adjacency.nnz // 2)

# %%
# PrivGE: perturb, propagate, classify Hadamard edge features. ``eps = inf``
# is the non-private baseline: the raw features, no mechanism ("passthrough").
eps_grid = [1.0, 4.0, np.inf]
auc_hds = []
for eps in eps_grid:
    hds = (HDSMechanism(eps=eps, k=20, feature_range=(0, 1), random_state=0)
           if np.isfinite(eps) else "passthrough")
    pipe = Pipeline([
        ("hds", hds),
        ("ppr", PPRPropagation(alpha=0.1)),
        ("link", HadamardLinkPredictor(validation=P_val.pairs, random_state=0)),
    ])
    pipe.fit(P_fit, y_fit)
    auc_hds.append(pipe.score(P_test, y_test))
    print(f"HDS eps={eps}: test AUC {auc_hds[-1]:.3f}")

# %%
# LPGNN: PGC reports feed the first GCN layer of a VGAE.
auc_pgc = []
for eps in eps_grid:
    pgc = (OneBitMechanism(eps=eps, feature_range=(0, 1), random_state=0)
           if np.isfinite(eps) else "passthrough")
    pipe = Pipeline([
        ("pgc", pgc),
        ("link", VGAELinkPredictor(epochs=200, validation=P_val.pairs, random_state=0)),
    ])
    pipe.fit(P_fit, y_fit)
    auc_pgc.append(pipe.score(P_test, y_test))
    print(f"PGC eps={eps} (per feature): test AUC {auc_pgc[-1]:.3f}")

# %%
labels = [str(e) for e in eps_grid]
x = np.arange(len(eps_grid))
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.bar(x - 0.2, auc_hds, 0.4, label="HDS + PPR + Hadamard LR (PrivGE)")
ax.bar(x + 0.2, auc_pgc, 0.4, label="PGC + VGAE (LPGNN)")
ax.set_xticks(x, labels)
ax.set_xlabel("privacy budget eps (inf = raw features)")
ax.set_ylabel("test ROC-AUC")
ax.set_ylim(0.5, 1.0)
ax.legend(loc="lower right", fontsize=8)
ax.set_title("Cora link prediction under local DP")
fig.tight_layout()
plt.show()
