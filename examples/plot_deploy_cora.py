"""
==========================================================
Deploying local DP: devices, reports and a server on Cora
==========================================================

Local DP exists so that raw data never leaves the user's device. This example
runs the whole protocol on Cora (Planetoid public split, 140 labelled users):

1. the **server** publishes three public specs (JSON): the users' features
   (:class:`~skldp.mechanisms.HDSMechanism`, eps = 1), the training users'
   labels (:class:`~skldp.mechanisms.LabelRandomizedResponse`, eps = 4) and
   everyone's adjacency list (:class:`~skldp.mechanisms.EdgeRR`, eps = 6, an
   edge kept if both endpoints report it);
2. a **fleet of devices** in separate processes, which import only the
   numpy encoder :mod:`skldp.device` (scikit-learn, scipy and torch are made
   unimportable there): each :class:`~skldp.device.Device` holds one user's
   row, label and list, answers each spec once with its own secret
   randomness, and writes its reports (JSON lines);
3. the **server** reads and validates the reports
   (:func:`~skldp.population.read_reports`), builds the graph of the reports
   (:func:`~skldp.population.received_graph`), trains the PrivGE pipeline
   (HDS -> PPR -> MLP) and an LPGNN model, and prints their accuracy and the
   budget every user spent, read from the ledger.

The same budgets are then simulated in one process, a new collection for each
of three seeds, and both results are printed side by side. One fleet and three
simulations show the protocol end to end and what each user spends; they are
too few to tell whether deploying costs or gains accuracy (last section). Read
more in the User Guide ("Deploying local DP").
"""

# %%
# The server: data it will never see, and the specs it publishes
# ----------------------------------------------------------------
# The dataset stands in for the users' devices: the server below reads only
# what the fleet writes.
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import torch
from sklearn.pipeline import Pipeline

from skldp.accounting import privacy_report
from skldp.datasets import load_cora
from skldp.mechanisms import EdgeRR, HDSMechanism, LabelRandomizedResponse
from skldp.models import LPGNNClassifier, MLPHead
from skldp.population import collection_spec, read_reports, received_graph
from skldp.propagation import PPRPropagation

os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)

cora = load_cora()
G, y = cora.data, cora.target
train, test = cora.train_mask, cora.test_mask
ids = G.node_ids.tolist()
EPS_X, EPS_Y, EPS_E = 1.0, 4.0, 6.0
CLASSES = list(range(7))

spec_x = collection_spec(HDSMechanism(EPS_X, k=20, feature_range=(0, 1)),
                         n_features=G.shape[1])
spec_y = collection_spec(LabelRandomizedResponse(EPS_Y, classes=CLASSES))
spec_e = collection_spec(EdgeRR(EPS_E, symmetrize="and"), node_ids=ids)
work = tempfile.mkdtemp(prefix="skldp-deploy-")
for name, spec in (("features", spec_x), ("labels", spec_y), ("edges", spec_e)):
    with open(os.path.join(work, f"spec_{name}.json"), "w") as fh:
        fh.write(spec.to_json(indent=1))
with open(os.path.join(work, "directory.json"), "w") as fh:
    json.dump(ids, fh)          # public: an adjacency list names other users
print(spec_y.to_json())

# %%
# The fleet: each process encodes its users one by one with the device API
# -------------------------------------------------------------------------
# Each slice of users gets a file with its users' own rows (in a real
# deployment each row never leaves its phone); the process imports only
# ``skldp.device`` and numpy.
FLEET = textwrap.dedent("""
    import json, sys
    class Blocker:                     # a device has numpy and the standard library only
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("sklearn", "scipy", "torch"):
                raise ImportError(name)
    sys.meta_path.insert(0, Blocker())
    from skldp.device import Device, Directory, read_spec
    work, part = sys.argv[1], sys.argv[2]
    specs = {k: read_spec(f"{work}/spec_{k}.json") for k in ("features", "labels", "edges")}
    directory = Directory(json.load(open(f"{work}/directory.json")))
    users = json.load(open(f"{work}/users_{part}.json"))
    out = {k: open(f"{work}/reports_{k}_{part}.jsonl", "w") for k in specs}
    for u in users:                      # one device per user, holding its own data only
        device = Device(user=u["id"])
        answers = {"features": device.answer(specs["features"], u["row"]),
                   "edges": device.answer(specs["edges"], u["neighbours"],
                                          directory=directory)}
        if "label" in u:
            answers["labels"] = device.answer(specs["labels"], u["label"])
        for k, record in answers.items():
            out[k].write(json.dumps(record) + "\\n")
    for fh in out.values():
        fh.close()
    print("part", part, ":", len(users), "devices answered")
""")

X = G.features.toarray() if hasattr(G.features, "toarray") else np.asarray(G.features)
A = G.adjacency
n_parts = 2
for part, rows in enumerate(np.array_split(np.arange(len(ids)), n_parts)):
    users = []
    for i in rows:
        u = {"id": ids[i], "row": X[i].tolist(),
             "neighbours": [ids[j] for j in A.indices[A.indptr[i]:A.indptr[i + 1]]]}
        if train[i]:
            u["label"] = int(y[i])
        users.append(u)
    with open(os.path.join(work, f"users_{part}.json"), "w") as fh:
        json.dump(users, fh)
env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
fleet = [subprocess.Popen([sys.executable, "-c", FLEET, work, str(part)], env=env,
                          stdout=subprocess.PIPE, text=True) for part in range(n_parts)]
for proc in fleet:
    out, _ = proc.communicate()
    assert proc.returncode == 0
    print(out.strip())

# %%
# The server: validate, build the graph of the reports, train
# -----------------------------------------------------------
# Every report is checked against its spec; refused ones are counted.


def lines_of(name):
    for part in range(n_parts):
        with open(os.path.join(work, f"reports_{name}_{part}.jsonl")) as fh:
            yield from fh


received = {name: read_reports(lines_of(name), spec, users=ids)
            for name, spec in (("features", spec_x), ("labels", spec_y), ("edges", spec_e))}
for r in received.values():
    print(r)
Gr, y_sent = received_graph(features=received["features"], labels=received["labels"],
                            edges=received["edges"], node_ids=ids)
print(Gr)
assert np.array_equal(y_sent >= 0, train)   # the users who sent a label


SEEDS = [0, 1, 2]


def hds(seed):
    # Over collected reports this step reads the collection (it does not perturb again).
    # In a simulation, random_state=seed makes both models of one seed read the same
    # collection, and each seed's simulation a new one.
    return HDSMechanism(EPS_X, k=20, feature_range=(0, 1), random_state=seed)


def privge(seed):
    return Pipeline([("hds", hds(seed)), ("ppr", PPRPropagation()),
                     ("clf", MLPHead(random_state=seed))])


def lpgnn(seed):
    return Pipeline([("hds", hds(seed)), ("clf", LPGNNClassifier(
        eps_y=EPS_Y, classes=CLASSES, epochs=100, random_state=seed))])


def scores(graphs, labels):
    """Test accuracy of both models, one value per seed of SEEDS; ``graphs(seed)`` gives
    the graph and the training users' labels of a run."""
    out = {"PrivGE (HDS -> PPR -> MLP)": [], "LPGNN": []}
    for seed in SEEDS:
        graph, y_train = graphs(seed)
        model = lpgnn(seed).fit(graph[train], y_train)
        if graph.population.simulated:   # LPGNN randomized the labels: reuse its reports
            y_train = model[-1].label_mechanism_.randomize(y_train, graph[train])
        pipe = privge(seed).fit(graph[train], y_train)
        out["LPGNN"].append(model.score(graph[test], y[test]))
        out["PrivGE (HDS -> PPR -> MLP)"].append(pipe.score(graph[test], y[test]))
    return out, pipe


deployed, pipe = scores(lambda seed: (Gr, y_sent[train]), train)
print(privacy_report(pipe))

# %%
# The same budgets, simulated in one process
# ------------------------------------------
# Each seed runs a new simulation: new devices, which answer the three
# collections anew. The edges are collected here, the features in the HDS
# step (``random_state=seed``: the two models of a seed read the same feature
# reports, each seed gets new ones) and the labels in LPGNN, whose reports the
# PrivGE pipeline of that seed reuses.
runs = {}


def simulation(seed):
    runs[seed] = G.new_simulation()
    return EdgeRR(EPS_E, symmetrize="and").fit_transform(runs[seed]), y[train]


simulated, _ = scores(simulation, train)

print(f"\nCora, Planetoid split; eps: features {EPS_X:g}, labels {EPS_Y:g}, "
      f"edges {EPS_E:g}; test accuracy, mean +- std over {len(SEEDS)} seeds")
print("  devices: the fleet's one collection; seeds change the training only")
print("  simulated: a new collection per seed; seeds change the reports and the training")
print(f"{'model':27s} {'devices':>14s} {'simulated':>14s}   simulated, per seed")
for name in deployed:
    a, b = deployed[name], simulated[name]
    print(f"{name:27s} {np.mean(a):8.3f} +- {np.std(a):.3f} {np.mean(b):8.3f} +- "
          f"{np.std(b):.3f}   {' '.join(f'{v:.3f}' for v in b)}")
report = privacy_report(Gr)
print(f"budget per user (ledger): at most {report.local_epsilon:g} "
      f"(features {report.epsilon_for('features'):g}, labels {report.epsilon_for('labels'):g}, "
      f"edges {report.epsilon_for('edges'):g}); each simulation: "
      f"{[privacy_report(g).local_epsilon for g in runs.values()]}")

# %%
# Reading the table
# -----------------
# The devices column scores models trained on one fleet's collection: its
# +- is the spread over training seeds only. The simulated column draws a new
# collection for each seed, so its values per seed show how far one
# collection moves the accuracy (three collections only). A gap between the
# columns of that size says nothing about deployment itself. What the table
# does show is that the same collections and models run on devices and in one
# process, and that each user is charged the same budget on both sides, read
# from the ledger.
