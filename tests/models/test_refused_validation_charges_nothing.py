"""A ``validation`` that fit refuses (its value, or the rows it names) is refused before any
read is noted: the fits checked it in the validation split, after the reads of the raw
features and edges (epsilon inf) and, for LPGNN and RGNN, after the labels' collection."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.models import (
    GATClassifier,
    GCNClassifier,
    LPGNNClassifier,
    MLPHead,
    RGNNClassifier,
    SolitudeClassifier,
)

N = 40
MODELS = {
    "GCN": lambda **kw: GCNClassifier(**kw),
    "GAT": lambda **kw: GATClassifier(heads=1, **kw),
    "LPGNN": lambda **kw: LPGNNClassifier(classes=[0, 1], **kw),
    "RGNN": lambda **kw: RGNNClassifier(classes=[0, 1], n_clusters=2, **kw),
    "Solitude": lambda **kw: SolitudeClassifier(**kw),
    "MLPHead": lambda **kw: MLPHead(**kw),
}
TRAIN = np.arange(20)
CASES = {   # (parameters, the error)
    "float positions": (dict(validation=[0.5, 1.5]), "integer node positions"),
    "without early stopping": (dict(validation=[1, 2], early_stopping=False),
                               "only used for early stopping"),
    "outside the graph": (dict(validation=[N + 5]), "outside"),
    "mask of another length": (dict(validation=np.ones(5, bool)), "mask has 5 entries"),
    "none of the fit rows": (dict(validation=[30, 31]), "none of the 20 rows"),
    "all of the fit rows": (dict(validation=TRAIN), "all 20 rows"),
}


def _graph(budget):
    rng = np.random.default_rng(0)
    A = np.triu(rng.random((N, N)) < 0.15, 1)
    return GraphData(rng.normal(size=(N, 3)), sp.csr_array((A | A.T).astype(float)),
                     budget=budget)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("budget", [None, 5.0])
def test_a_refused_validation_charges_nothing(model, case, budget):
    params, error = CASES[case]
    G = _graph(budget)
    y = np.arange(N) % 2
    clf = MODELS[model](epochs=2, device="cpu", random_state=0,
                        **{"early_stopping": True, **params})
    with pytest.raises((ValueError, TypeError), match=error):
        clf.fit(G[TRAIN], y[TRAIN])
    assert len(G.ledger) == 0
