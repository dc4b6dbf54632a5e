"""PyTorch Geometric's GCN beside skldp's on the Planetoid public split: accuracy, seconds.

Both read the same dataset file (Cora, CiteSeer: 140 / 120 training nodes, 500
validation, 1,000 test) with row-normalised features. PyG's model is its
``examples/gcn.py``: 2 GCN layers of 16, ReLU, dropout 0.5 (input and hidden),
Adam (lr 0.01, weight decay 5e-4 on the first layer only), 200 epochs, the
test accuracy of the epoch with the best validation accuracy. skldp's is
``make_pipeline(NodeWise(Normalizer("l1")), GCNClassifier(validation=val))`` at
its defaults, fitted on the training and validation nodes (early stopping on
the validation loss). For each seed the two fits run one after the other in
this process, so their times are a side-by-side ratio; a fit's time includes
its tensors' set-up and the evaluations it makes (PyG: every epoch, as in its
example). PyTorch Geometric is a benchmark extra (``pip install
"skldp[bench]"``); without it the PyG rows are skipped.

Usage::

    SKLDP_DATASETS_DIR=/path/to/datasets OMP_NUM_THREADS=1 \\
        python benchmarks/bench_planetoid.py [--datasets cora citeseer] [--seeds 3]
"""

import argparse
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


def fit_pyg(data, seed, epochs=200):
    """Test accuracy of PyG's example GCN at its best validation accuracy, and seconds."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    X, A, y, tr, va, te = data
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    x = torch.as_tensor(X)
    coo = A.tocoo()
    edge_index = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
    yt = torch.as_tensor(y)
    masks = [torch.as_tensor(m) for m in (tr, va, te)]

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(X.shape[1], 16)
            self.conv2 = GCNConv(16, int(y.max()) + 1)

        def forward(self, x, ei):
            x = F.dropout(x, 0.5, self.training)
            x = self.conv1(x, ei).relu()
            x = F.dropout(x, 0.5, self.training)
            return self.conv2(x, ei)

    model = GCN()
    opt = torch.optim.Adam([dict(params=model.conv1.parameters(), weight_decay=5e-4),
                            dict(params=model.conv2.parameters(), weight_decay=0)], lr=0.01)
    best_val, test = -1.0, 0.0
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        F.cross_entropy(model(x, edge_index)[masks[0]], yt[masks[0]]).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(x, edge_index).argmax(1)
        acc = [float((pred[m] == yt[m]).float().mean()) for m in masks]
        if acc[1] > best_val:
            best_val, test = acc[1], acc[2]
    return test, time.perf_counter() - t0


def fit_skldp(G, y, masks, seed):
    """Test accuracy of skldp's GCN (row-normalised features, validation nodes), and seconds."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    from skldp import NodeWise
    from skldp.models import GCNClassifier
    tr, va, te = masks
    t0 = time.perf_counter()
    pipe = make_pipeline(NodeWise(Normalizer(norm="l1")),
                         GCNClassifier(validation=va, device="cpu", random_state=seed))
    pipe.fit(G[tr | va], y[tr | va])
    seconds = time.perf_counter() - t0
    return pipe.score(G[te], y[te]), seconds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args(argv)
    from skldp.datasets import load_dataset
    from skldp.model_selection import planetoid_split
    try:
        import torch_geometric  # noqa: F401
        have_pyg = True
    except ImportError:
        have_pyg = False
        print("torch_geometric is not installed (pip install 'skldp[bench]'): PyG rows skipped")
    warnings.simplefilter("ignore")
    print("| dataset | library | test accuracy (%) | seconds per fit | skldp / PyG time |")
    print("|---|---|---|---|---|")
    for name in args.datasets:
        b = load_dataset(name)
        G, y = b.data, np.asarray(b.target)
        masks = planetoid_split(b)
        X = G.features.toarray() if hasattr(G.features, "toarray") else np.asarray(G.features)
        s = X.sum(axis=1, keepdims=True)
        X = np.divide(X, s, out=np.zeros_like(X), where=s > 0).astype(np.float32)
        data = (X, G.adjacency, y, *masks)
        rows = {"skldp": [], "PyG": []}
        for seed in range(args.seeds):
            rows["skldp"].append(fit_skldp(G, y, masks, seed))
            if have_pyg:
                rows["PyG"].append(fit_pyg(data, seed))
        t_skldp = np.mean([r[1] for r in rows["skldp"]])
        for lib, r in rows.items():
            if not r:
                continue
            a = 100 * np.array([v[0] for v in r])
            t = np.mean([v[1] for v in r])
            ratio = f"{t_skldp / t:.2f}" if lib == "PyG" else ""
            print(f"| {name} | {lib} | {a.mean():.1f} ± {a.std():.1f} | {t:.2f} | {ratio} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
