"""skldp's GCNClassifier beside PyTorch Geometric's GCN on the same files (issue 33).

Cora and CiteSeer, Planetoid public split (140 / 120 training nodes, 500
validation, 1,000 test, as stored in the dataset files), row-normalised
features, the graph in the clear: Kipf & Welling's GCN, 2 layers, 16 hidden
units, ReLU, dropout 0.5, Adam (lr 0.01, weight decay 5e-4 on every
parameter), 200 epochs, the weights of the epoch with the lowest loss on the
500 validation nodes kept (skldp's early stopping with a patience of 200, so it
never stops early; the same selection written out for PyG). For each seed,
both fit from the same arrays; the time of a fit counts the graph's and the
features' transfer to the device, the training and the test prediction. One
unrecorded fit per library first (CUDA context, kernels). Without
torch_geometric the PyG rows are skipped and say so.

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets python benchmarks/bench_pyg.py \\
        [--datasets cora citeseer] [--seeds 5] [--device cuda] [--epochs 200] [--json rows.json]
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import skldp  # noqa: F401
except ImportError:   # run from a source checkout without installing it
    sys.path.insert(0, os.path.dirname(HERE))


def planetoid(name):
    """``(X, A, y, train, val, test)``: row-normalised dense features, CSR adjacency, masks."""
    from skldp.datasets import load_dataset
    b = load_dataset(name)
    X = b.data.features
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float32)
    s = X.sum(axis=1, keepdims=True)
    X = np.divide(X, s, out=np.zeros_like(X), where=s > 0)
    return (X, b.data.adjacency, np.asarray(b.target), np.asarray(b.train_mask),
            np.asarray(b.val_mask), np.asarray(b.test_mask))


def _sync(device):
    import torch
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def fit_skldp(data, seed, device, epochs):
    """Test accuracy of skldp's GCNClassifier (best validation loss of ``epochs``)."""
    from skldp import GraphData
    from skldp.models import GCNClassifier
    X, A, y, tr, va, te = data
    G = GraphData(X, A)   # a new graph per fit: its transfer to the device is timed
    clf = GCNClassifier(hidden_size=16, n_layers=2, dropout=0.5, lr=0.01, weight_decay=5e-4,
                        epochs=epochs, patience=epochs, validation=va, device=device,
                        random_state=seed)
    fit = tr | va                     # the validation nodes select, they never train
    clf.fit(G[fit], y[fit])
    return float(clf.score(G[te], y[te]))


def fit_pyg(data, seed, device, epochs):
    """Test accuracy of a PyG GCN trained the same way (best validation loss)."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    X, A, y, tr, va, te = data
    torch.manual_seed(seed)
    coo = A.tocoo()
    edge_index = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long,
                                 device=device)
    x = torch.as_tensor(X, device=device)
    target = torch.as_tensor(y, dtype=torch.long, device=device)
    masks = [torch.as_tensor(m, device=device) for m in (tr, va, te)]

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(X.shape[1], 16, cached=True)
            self.conv2 = GCNConv(16, int(y.max()) + 1, cached=True)

        def forward(self, x):
            x = F.dropout(x, 0.5, self.training)
            x = F.relu(self.conv1(x, edge_index))
            x = F.dropout(x, 0.5, self.training)
            return self.conv2(x, edge_index)

    model = GCN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    best, state = np.inf, None
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(x)[masks[0]], target[masks[0]])
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            vloss = float(F.cross_entropy(model(x)[masks[1]], target[masks[1]]))
        if vloss < best:
            best = vloss
            state = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    return float((pred[masks[2]] == target[masks[2]]).float().mean())


LIBRARIES = {"skldp GCNClassifier": fit_skldp, "PyG GCNConv": fit_pyg}


def run(datasets=("cora", "citeseer"), seeds=5, device="cuda", epochs=200):
    """Rows ``{case, library, device, seconds (median per fit), acc_mean, acc_std}``."""
    warnings.simplefilter("ignore")
    rows = []
    for name in datasets:
        data = planetoid(name)
        for lib, fn in LIBRARIES.items():
            case = f"{name} GCN, Planetoid split: {lib}"
            try:
                fn(data, 0, device, min(epochs, 5))   # warm-up, not recorded
                times, accs = [], []
                for seed in range(seeds):
                    _sync(device)
                    t0 = time.perf_counter()
                    accs.append(fn(data, seed, device, epochs))
                    _sync(device)
                    times.append(time.perf_counter() - t0)
            except Exception as exc:   # torch_geometric missing, ...
                why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                rows.append(dict(case=case, library=lib, device=device, skipped=why[:160]))
                print(f"skipped {case}: {why}", file=sys.stderr, flush=True)
                continue
            rows.append(dict(case=case, library=lib, device=device,
                             seconds=float(np.median(times)), acc_mean=float(np.mean(accs)),
                             acc_std=float(np.std(accs)), seeds=seeds, epochs=epochs))
    return rows


def table(rows):
    lines = ["| dataset and library | device | s per fit (median) | test accuracy |",
             "|---|---|---|---|"]
    for r in rows:
        if r.get("skipped"):
            lines.append(f"| {r['case']} | {r['device']} | — | skipped: {r['skipped']} |")
        else:
            lines.append(f"| {r['case']} | {r['device']} | {r['seconds']:.2f} | "
                         f"{100 * r['acc_mean']:.1f} ± {100 * r['acc_std']:.1f} "
                         f"({r['seeds']} seeds) |")
    return "\n".join(lines)


def main(argv=None):
    import torch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = run(a.datasets, a.seeds, a.device, a.epochs)
    print(table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
