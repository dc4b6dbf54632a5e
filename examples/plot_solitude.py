"""
==================================================================
Edge LDP on adjacency lists and learned graph denoising (Solitude)
==================================================================

Here the server does not know the graph: every user randomizes their own
adjacency list with randomized response (:class:`~skldp.mechanisms.EdgeRR`,
[Lin et al., IEEE TIFS 2022], Eqs. 5-6): each bit is flipped with probability
``1 / (1 + e^eps)``. Because almost all bits are zeros, even a modest flip
probability injects many more edges than the graph has, and most of them join
different communities.

:class:`~skldp.models.SolitudeClassifier` learns a calibrated adjacency jointly
with a GCN (eq. (14)): an Adam step on the model, an Adam step on the edge
weights for the cross entropy and the Frobenius pull to the received graph,
and a proximal step for the L1 sparsity term, entries kept in [0, 1]. The
weights live only on the edges the server received.

On 4-block stochastic block models we compare the true edges and the
injected ones in the learned graph, and the test accuracy with and without
structure learning, over five seeds (a new graph, new reports and a new split
each): one split of a few hundred nodes is too small to tell the two apart.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
import torch

from skldp import GraphData
from skldp.mechanisms import EdgeRR
from skldp.models import SolitudeClassifier

torch.set_num_threads(1)
n, k, d = 400, 4, 20


def noisy_sbm(seed):
    """A 4-block SBM whose users send their adjacency lists through EdgeRR (eps = 3)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), n // k)
    P = np.where(y[:, None] == y[None, :], 0.05, 0.0)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = sp.csr_matrix((A | A.T).astype(float))
    X = rng.normal(size=(k, d))[y] + 2.0 * rng.normal(size=(n, d))
    # Every user randomizes their list; the server keeps an edge reported by either end.
    edge_rr = EdgeRR(eps=3.0, symmetrize="or", random_state=seed)
    return edge_rr, edge_rr.fit_transform(GraphData(X, A)), A, y, rng


# %%
# The received graph of the first seed.
edge_rr, Gr, A, y, rng = noisy_sbm(0)
R = Gr.adjacency
injected = R - R.multiply(A)
rows, cols = injected.nonzero()
print(f"true edges: {A.nnz // 2}, received: {R.nnz // 2} "
      f"(expected {edge_rr.expected_n_edges(n, A.nnz // 2) / 2:.0f}), "
      f"injected: {injected.nnz // 2}, of which between communities: "
      f"{np.mean(y[rows] != y[cols]):.0%}; per-user budget: eps = {edge_rr.epsilon_}")

# %%
# For each seed, train on half of the nodes, with and without learning the
# structure, and score on the other half. Both models keep the epoch with the
# best accuracy on a quarter of their training nodes (``validation_fraction``;
# the default tenth would be 20 nodes here).
kw = dict(epochs=200, patience=200, validation_fraction=0.25)
seeds = [0, 1, 2, 3, 4]
acc_plain, acc_sol, w_true, w_inj = [], [], [], []
for seed in seeds:
    _, Gr, A, y, rng = noisy_sbm(seed)
    idx = rng.permutation(n)
    tr, te = idx[: n // 2], idx[n // 2:]
    plain = SolitudeClassifier("gcn", learn_structure=False, random_state=seed, **kw)
    solitude = SolitudeClassifier("gcn", random_state=seed, **kw)
    plain.fit(Gr[tr], y[tr])
    solitude.fit(Gr[tr], y[tr])
    acc_plain.append((plain.predict(Gr[te]) == y[te]).mean())
    acc_sol.append((solitude.predict(Gr[te]) == y[te]).mean())
    R, L = Gr.adjacency, solitude.learned_adjacency_
    true = R.multiply(A)
    w_true.append(np.asarray(L[true.nonzero()]).ravel())
    w_inj.append(np.asarray(L[(R - true).nonzero()]).ravel())
    print(f"seed {seed}: accuracy GCN on the received graph {acc_plain[-1]:.3f}, "
          f"Solitude {acc_sol[-1]:.3f}")
w_true, w_inj = np.concatenate(w_true), np.concatenate(w_inj)
gain = np.subtract(acc_sol, acc_plain)
print(f"mean over {len(seeds)} seeds: GCN {np.mean(acc_plain):.3f}, "
      f"Solitude {np.mean(acc_sol):.3f}; Solitude - GCN {gain.mean():+.3f} "
      f"(std {gain.std():.3f})")
print(f"learned weight >= 0.5: true edges {np.mean(w_true >= 0.5):.2f}, "
      f"injected edges {np.mean(w_inj >= 0.5):.2f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
bins = np.linspace(0, 1, 21)
ax.hist(w_inj, bins=bins, alpha=0.6, density=True, label="injected by randomized response")
ax.hist(w_true, bins=bins, alpha=0.6, density=True, label="true edges")
ax.set_xlabel("learned edge weight in $A^c$")
ax.set_ylabel("density")
ax.set_title(f"Solitude on noisy SBMs ({len(seeds)} seeds): mean accuracy "
             f"{np.mean(acc_plain):.2f} -> {np.mean(acc_sol):.2f}")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# Reading the result
# ------------------
# The learned graph separates the two kinds of edges only in part: more true
# edges than injected ones keep a weight of 0.5 or more, but most injected
# edges do too (printed above). On these graphs learning the structure does
# not raise the accuracy on average: the mean difference over the five seeds
# is small next to its spread from one seed to the next, where it goes either
# way. A single split would show a gain or a loss by chance.
