"""The Planetoid study: its runs, its regimes and its table beside the references."""

import numpy as np
import pytest

from skldp.datasets import load_dataset
from skldp.model_selection import planetoid_split
from studies import get_study, list_studies
from studies.planetoid import KINDS, PlanetoidRun, planetoid_table


def test_registered_with_both_regimes_and_ten_seeds():
    assert "planetoid" in list_studies()
    study = get_study("planetoid")
    runs = study.runs()
    assert len(runs) == 2 * len(KINDS) * 2 * 10
    assert {dict(r.params)["regime"] for r in runs} == {"validation", "train-only"}
    assert study.report is planetoid_table


@pytest.mark.parametrize("regime", ["validation", "train-only"])
def test_label_propagation_run_never_fits_on_test_labels(regime):
    b = load_dataset("cora")
    G, y = b.data, np.asarray(b.target)
    masks = planetoid_split(b)
    run = PlanetoidRun("label propagation", regime)
    out = run.run(G, y, masks)
    assert 0.5 < out["accuracy"] < 0.9 and out["fit_seconds"] > 0
    assert ("alpha" in out) == (regime == "validation")
    with pytest.raises(ValueError, match="kind"):
        PlanetoidRun("MLP").run(G, y, masks)


def test_table_beside_the_references():
    records = [{"method": "GCN", "dataset": ds, "params": {"regime": r},
                "metrics": {"accuracy": a, "fit_seconds": 1.0}}
               for ds, r, a in [("cora", "validation", 0.82), ("cora", "validation", 0.80),
                                ("citeseer", "train-only", 0.70)]]
    text = planetoid_table(records)
    row = next(line for line in text.splitlines() if line.startswith("| GCN |"))
    assert "81.0 ± 1.0" in row and "70.0 ± 0.0" in row and "Kipf & Welling" in row
    assert "| GAT | — | — | — | — |" in text


def test_ppr_pipeline_chooses_its_weight_decay_on_validation_nodes_only(monkeypatch):
    import studies.planetoid as module
    grid = ({"alpha": 0.1, "weight_decay": 5e-5}, {"alpha": 0.1, "weight_decay": 5e-2})
    monkeypatch.setattr(module, "PPR_GRID", grid)
    b = load_dataset("citeseer")
    G, y = b.data, np.asarray(b.target)
    masks = planetoid_split(b)
    out = PlanetoidRun("PPR -> MLPHead", "validation").run(G, y, masks)
    assert {"alpha": out["alpha"], "weight_decay": out["weight_decay"]} in grid
    # scrambling the test labels changes neither the choice nor the validation accuracy
    scrambled = y.copy()
    test = masks[2]
    scrambled[test] = np.random.default_rng(0).permutation(scrambled[test])
    again = PlanetoidRun("PPR -> MLPHead", "validation").run(G, scrambled, masks)
    assert again["weight_decay"] == out["weight_decay"]
    assert again["val_accuracy"] == out["val_accuracy"]
