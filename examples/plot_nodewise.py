"""
=============================================================
Plain scikit-learn transformers in a graph pipeline: NodeWise
=============================================================

A graph step such as :class:`~skldp.propagation.PPRPropagation` needs the
features of *every* node, while a pipeline fits on the training nodes only.
A plain scikit-learn transformer placed before it would see (and return) only
the rows of the view, so the graph would be lost.
:class:`~skldp.NodeWise` wraps any transformer: it is fitted on the rows of
the view and applied to all nodes of the graph.

Where it may stand in a private pipeline follows from the privacy model:

* **before the mechanism** runs what each user does alone, on their own
  data: only transforms that read nothing from other users, e.g. filling a
  missing answer with a public constant
  (``NodeWise(SimpleImputer(strategy="constant"), on_device=True)``, fitted
  on no user data). A fitted statistic (mean imputation, ``StandardScaler``)
  would be computed from other users' raw data, which the local model
  forbids: the mechanism refuses it;
* **after the mechanism** runs on the server, on the reports: any transform
  is post-processing and spends nothing, e.g. a truncated SVD of the noisy
  reports (``NodeWise(TruncatedSVD(64))``) fitted on the training nodes.

On Cora, 10% of the feature entries are missing (users who skipped some
questions); we compare the accuracy with and without the SVD on the reports.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.decomposition import TruncatedSVD
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skldp import NodeWise, ToPandas
from skldp.accounting import privacy_report
from skldp.datasets import load_cora
from skldp.mechanisms import OneBitMechanism
from skldp.model_selection import random_node_split
from skldp.models import MLPHead
from skldp.propagation import PPRPropagation

torch.set_num_threads(1)
cora = load_cora()
y = cora.target
X = cora.data.features.toarray()
X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan  # unanswered entries
G = cora.data.with_features(X, source="users")   # the users' own answers
train, val, test = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
fit = train | val

# %%
# Without NodeWise the graph is lost
# ----------------------------------
# ``StandardScaler`` returns a plain array of the training rows; the graph
# step after it has no graph to propagate on.
# (Cora without the missing entries here.)
try:
    Pipeline([("scale", StandardScaler(with_mean=False)),
              ("ppr", PPRPropagation())]).fit(cora.data[fit])
except TypeError as exc:
    print(f"TypeError: {exc}")
smooth = Pipeline([("scale", NodeWise(StandardScaler(with_mean=False))),
                   ("ppr", PPRPropagation())]).fit(cora.data[fit])
print("with NodeWise:", smooth.transform(cora.data[test]))

# %%
# Missing entries are refused by graph steps (NaN would spread to every
# neighbour), with a message that says what to do:
try:
    PPRPropagation().fit(G[fit])
except ValueError as exc:
    print(f"ValueError: {exc}")


# %%
# A private pipeline with NodeWise on both sides of the mechanism
# ---------------------------------------------------------------
# The demonstrations above read the users' raw features in the clear (a
# scaler and PPR fitted on the server, a plain array exported for
# ``StandardScaler``): the ledger of these users records it, with
# ``epsilon = inf``. The private pipeline therefore runs on new simulated
# devices holding the same answers, ``G.new_simulation()`` (an empty ledger:
# nothing read, nothing sent), one simulation per ``eps``, each a separate
# deployment. Both pipelines of one ``eps`` run on the same users: the
# pipeline with the SVD reuses the reports they sent, and spends nothing more.
def make_pipeline(eps, svd):
    steps = [
        # on the user's device: a public constant, nothing read from others
        ("impute", NodeWise(SimpleImputer(strategy="constant", fill_value=0.0),
                            on_device=True)),
        ("mech", OneBitMechanism(eps=eps, feature_range=(0, 1), random_state=0)),
    ]
    if svd:  # on the server: post-processing of the reports
        steps.append(("svd", NodeWise(TruncatedSVD(64, random_state=0))))
    steps += [("ppr", PPRPropagation(alpha=0.1)),
              ("clf", MLPHead(epochs=60, validation_fraction=1 / 3, random_state=0))]
    return Pipeline(steps)


eps_grid = [0.5, 2.0, 8.0]
acc = {False: [], True: []}
for eps in eps_grid:
    users = G.new_simulation()   # devices that have sent nothing yet
    for svd in (False, True):
        pipe = make_pipeline(eps, svd).fit(users[fit], y[fit])
        acc[svd].append(pipe.score(users[test], y[test]))
    print(f"eps={eps:<4} accuracy: reports {acc[False][-1]:.3f}, "
          f"SVD of the reports {acc[True][-1]:.3f}")

# The report of the last deployment (``eps = 8``) counts the mechanism only:
# imputation and SVD spend nothing.
print(privacy_report(pipe))

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.5))
ax.plot(eps_grid, acc[False], "o-", label="impute -> one-bit -> PPR -> MLP")
ax.plot(eps_grid, acc[True], "s-", label="... -> one-bit -> SVD(64) -> PPR -> MLP")
ax.set(xscale="log", xlabel="eps per feature", ylabel="test accuracy (Cora)",
       title="NodeWise before and after the mechanism")
ax.set_xticks(eps_grid, [str(e) for e in eps_grid])
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Reading the plot
# ----------------
# The privacy report counts the one-bit mechanism only (``eps`` per feature,
# so 1,433 times ``eps`` per user): the imputation happened on each user's
# side with a public constant, and the SVD is post-processing of the reports.
# It is the report of users whose raw features nothing else read: the
# demonstrations at the top, which did read them, ran on the users of ``G``,
# whose own report ends in ``inf`` (``privacy_report(G)``).
# Post-processing is free in privacy but not in accuracy: 64 components of
# the noisy reports keep less of the signal than the PPR propagation of all
# 1,433 coordinates at small ``eps``.

# %%
# Plain steps after the graph steps: feature names and node ids
# -------------------------------------------------------------
# A plain scikit-learn step placed after the graph steps receives the view's
# rows as an array: it sees ``x0, x1, ...`` and row numbers. ``ToPandas``
# hands it a DataFrame instead, indexed by node id with the graph's feature
# names, and ``set_output(transform="pandas")`` keeps them. Here it frames the
# propagated reports of the last deployment: post-processing, so the users'
# report is unchanged.
named = Pipeline([("features", pipe[:-1]), ("frame", ToPandas()),
                  ("scale", StandardScaler().set_output(transform="pandas"))])
Z = named.fit(users[fit]).transform(users[test])
print(Z.iloc[:3, :4])
print(privacy_report(users).local_epsilon == privacy_report(pipe).local_epsilon)
