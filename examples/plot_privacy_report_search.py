"""
===========================================================
What a hyperparameter search spends: privacy_report
===========================================================

Tuning a private pipeline with :class:`~sklearn.model_selection.GridSearchCV`
is not free: every candidate setting of a local DP mechanism is a report that
each user sends. :func:`skldp.accounting.privacy_report` reads the users'
ledger, which recorded every report they sent during the search, not only what
the refitted best pipeline holds:

* a mechanism with an integer ``random_state`` makes one *collection* per
  distinct setting (its class and parameters): the folds and the refit of one
  setting reuse the same reports, so a grid over two budgets costs their sum;
* a parameter that is not private (here the propagation's ``alpha``) adds no
  collection;
* with ``random_state=None`` every fit draws fresh noise, so every candidate in
  every fold is a new report and the costs add up.

We search over the per-user budget ``eps`` of
:class:`~skldp.mechanisms.HDSMechanism` and the
teleport probability ``alpha`` of
:class:`~skldp.propagation.PPRPropagation` on Cora.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skldp.accounting import privacy_report
from skldp.datasets import load_cora
from skldp.mechanisms import HDSMechanism
from skldp.model_selection import LabelledKFold, random_node_split
from skldp.models import MLPHead
from skldp.propagation import PPRPropagation

torch.set_num_threads(1)
cora = load_cora()
G, y = cora.data, cora.target
G_none = G.new_simulation()        # the second search: separate simulated users
train, val, test = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
fit = train | val


def make_pipeline(random_state):
    return Pipeline([
        ("mech", HDSMechanism(eps=1.0, k=5, feature_range=(0, 1), random_state=random_state)),
        ("ppr", PPRPropagation()),
        ("clf", MLPHead(epochs=40, early_stopping=False, random_state=0)),
    ])


grid = {"mech__eps": [0.5, 2.0], "ppr__alpha": [0.1, 0.3]}

# %%
# A search with a fixed ``random_state``
# --------------------------------------
# 2 budgets x 2 alphas x 2 folds = 8 fits, plus the refit.
search = GridSearchCV(make_pipeline(0), grid, cv=LabelledKFold(2, shuffle=True, random_state=0))
search.fit(G[fit], y[fit])
report = privacy_report(search)
print(f"best parameters: {search.best_params_}, "
      f"test accuracy {search.score(G[test], y[test]):.3f}")
print(report)
refit = sum(s.epsilon for s in report.spends if s.step)
print(f"refitted pipeline: eps = {refit:g} per user; the search collected "
      f"{len(report.spends)} reports per user, eps = {report.local_epsilon:g}")

# %%
# The same search with ``random_state=None``
# ------------------------------------------
# Each of the 9 fits draws new reports: the per-user cost is the sum over all
# fits. (A deployment leaves ``random_state=None`` so that nobody can
# regenerate the noise; it should then search on public or simulated data, or
# budget for it.)
search_none = GridSearchCV(make_pipeline(None), grid,
                           cv=LabelledKFold(2, shuffle=True, random_state=0))
search_none.fit(G_none[fit], y[fit])
report_none = privacy_report(search_none)
print(f"random_state=None: {len(report_none.spends)} reports per user, "
      f"eps = {report_none.local_epsilon:g}")

# %%
# Plot: validation accuracy of the candidates, and the budgets
# ------------------------------------------------------------
res = search.cv_results_
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
for alpha, marker in zip(grid["ppr__alpha"], "os", strict=True):
    sel = np.asarray(res["param_ppr__alpha"]) == alpha
    axes[0].errorbar(np.asarray(res["param_mech__eps"])[sel], res["mean_test_score"][sel],
                     yerr=res["std_test_score"][sel], marker=marker, capsize=3,
                     label=f"alpha = {alpha}")
axes[0].set(xscale="log", xlabel="eps per user", ylabel="cross-validated accuracy",
            title="GridSearchCV on Cora (2 folds)")
axes[0].legend()
bars = {"best pipeline\n(refit)": refit,
        "search,\nrandom_state=0": report.local_epsilon,
        "search,\nrandom_state=None": report_none.local_epsilon}
axes[1].bar(list(bars), list(bars.values()), color=["tab:green", "tab:blue", "tab:red"])
for i, v in enumerate(bars.values()):
    axes[1].text(i, v, f"{v:g}", ha="center", va="bottom")
axes[1].set(ylabel="epsilon per user", title="what privacy_report counts")
fig.tight_layout()
plt.show()

# %%
# Reading the plot
# ----------------
# The refitted pipeline alone spends the budget of the chosen setting. With a
# fixed ``random_state`` the search collected one report per budget in the
# grid (``alpha`` is not private: it only changes the server's processing), so
# the users spent ``0.5 + 2 = 2.5``. With fresh noise at every fit they spent
# the sum over all 9 fits.
