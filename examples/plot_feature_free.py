"""
=================================================================
Feature-free baselines: what the graph alone gives on Cora
=================================================================

A locally private feature model is worth its budget only if it beats what
the server gets *without* the features. On a homophilous graph such as Cora
that bar is high: the training labels and the edges already predict most
nodes. :mod:`skldp.baselines` makes the bar an ordinary estimator:

* :class:`~skldp.baselines.LabelPropagationClassifier` (Zhou et al., NIPS
  2004) spreads the training labels over the graph;
* :class:`~skldp.baselines.StructuralFeatures` builds node features from the
  structure only (degree, spectral embedding, a random projection of
  personalised PageRank rows), for any head such as
  :class:`~skldp.models.MLPHead`;
* :class:`~skldp.baselines.CorrectAndSmooth` (Huang et al., ICLR 2021)
  post-processes any classifier, private ones included, with label
  propagation;
* :class:`~skldp.baselines.GraphFeatureUnion` concatenates a structural and
  a private-feature branch (a hybrid input).

None of the feature-free steps reads a node feature, so they spend no
budget; :func:`skldp.accounting.privacy_report` counts only the mechanisms.
Two seeds of the random 50/25/25 split keep the run short; no choice below
looks at the test labels (all parameters are fixed defaults).
"""

# %%
# Data, splits and the models
# ---------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.pipeline import Pipeline

from skldp.accounting import privacy_report
from skldp.baselines import (
    CorrectAndSmooth,
    GraphFeatureUnion,
    LabelPropagationClassifier,
    StructuralFeatures,
)
from skldp.datasets import load_cora
from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse
from skldp.model_selection import random_node_split
from skldp.models import MLPHead
from skldp.propagation import PPRPropagation

os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)

cora = load_cora()
G, y = cora.data, cora.target
classes = np.unique(y)           # Cora's 7 topics: a public label domain
seeds = [0, 1]
EPS = 1.0


def head(seed):
    # trains on 50 % of the nodes and early-stops on the validation 25 %
    return MLPHead(validation_fraction=1 / 3, random_state=seed)


def private_branch(seed):
    """PrivGE's private features: HDS reports (eps per user), propagated with PPR."""
    return Pipeline([("hds", HDSMechanism(eps=EPS, feature_range=(0, 1), random_state=seed)),
                     ("ppr", PPRPropagation())])


models = {
    "label propagation": lambda s: LabelPropagationClassifier(alpha=0.9),
    "structure -> MLP": lambda s: Pipeline([("sf", StructuralFeatures(random_state=s)),
                                            ("clf", head(s))]),
    f"HDS eps={EPS:g} -> PPR -> MLP": lambda s: Pipeline([("private", private_branch(s)),
                                                          ("clf", head(s))]),
    "hybrid (structure + HDS) -> MLP": lambda s: Pipeline([
        ("union", GraphFeatureUnion([("structure", StructuralFeatures(random_state=s)),
                                     ("private", private_branch(s))])),
        ("clf", head(s))]),
    "C&S around HDS -> PPR -> MLP": lambda s: CorrectAndSmooth(
        Pipeline([("private", private_branch(s)), ("clf", head(s))])),
    "label propagation, labels eps=2": lambda s: LabelPropagationClassifier(
        label_mechanism=LabelRandomizedResponse(2.0, classes=classes, random_state=s)),
}

# %%
# Fit on train + validation, score on test
# ----------------------------------------
# Each model and seed is a separate deployment: new simulated users
# (``G.new_simulation()``: the same data and graph, an empty ledger), so the
# epsilon printed for a model is what the users of one of its runs spent.
scores, reports = {}, {}
for name, make in models.items():
    accs = []
    for seed in seeds:
        train, val, test = random_node_split(y, 0.5, 0.25, 0.25, random_state=seed)
        fit = train | val
        users = G.new_simulation()  # a separate deployment: new simulated users
        model = make(seed).fit(users[fit], y[fit])
        accs.append(model.score(users[test], y[test]))
    scores[name] = np.array(accs)
    reports[name] = privacy_report(model)
    print(f"{name:<34} {scores[name].mean():.3f} +- {scores[name].std():.3f}   "
          f"epsilon per user: {reports[name].local_epsilon:g}")

# %%
# The privacy report of the hybrid counts the HDS branch only (eps = 1 per user)
print(reports["hybrid (structure + HDS) -> MLP"])

# %%
# Plot
# ----
fig, ax = plt.subplots(figsize=(7, 3.8))
names = list(scores)
means = [scores[n].mean() for n in names]
ax.barh(names, means, xerr=[scores[n].std() for n in names], capsize=3,
        color=["gray", "gray", "tab:blue", "tab:blue", "tab:blue", "tab:orange"])
ax.axvline(scores["label propagation"].mean(), color="k", linestyle=":",
           label="feature-free bar (label propagation)")
ax.set_xlim(0.5, 0.95)
ax.invert_yaxis()
ax.set_xlabel("test accuracy (Cora, 50/25/25 split)")
ax.legend(loc="lower left", fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Reading the plot
# ----------------
# Gray bars use no feature and spend nothing; blue bars send each user's HDS
# report (eps = 1); the orange bar spends eps = 2 on each training label and
# nothing on features. On Cora label propagation alone (about 87 %) is a
# point or so below the non-private feature model of :ref:`the PrivGE
# example <sphx_glr_auto_examples_plot_privge_cora.py>` and above the
# private pipeline (about 84 %): at eps = 1 the private features do not pay
# for themselves. Correct and Smooth around the private pipeline (free
# post-processing with the training labels) lifts it to the level of label
# propagation or slightly above. Concatenating structural features to its
# input (the hybrid, about 86 %) is one to one and a half points above the
# private pipeline and the structural features alone, about the private
# pipeline's spread over the two seeds, and below label propagation: the
# PPR-propagated reports already carry the graph. A private feature model
# should be compared with these baselines, not with a model that ignores the
# neighbours' labels.
