"""The total-budget study: its grid, the ledger's total per user, its verdict table."""

import numpy as np
import pytest

from skldp.datasets import load_dataset
from skldp.experiments import run_study
from skldp.model_selection import random_node_split
from studies import get_study, list_studies
from studies.budget_split import (
    BUDGETS,
    DATASET_SHAPES,
    KINDS,
    RANDOM,
    SCARCE,
    SHARES,
    BudgetRun,
    budget_split_study,
    budget_split_table,
    cells_table,
    check_ledger,
    public_quantities,
    recommender_check,
    split_rows,
)


def test_grid_every_split_of_every_budget_in_both_regimes():
    assert "budget_split" in list_studies()
    study = get_study("budget_split", datasets=["cora", "citeseer"], seeds=range(3))
    runs = study.runs()
    assert {r.split for r in runs} == {RANDOM, SCARCE}
    per_cell = {}
    for r in runs:
        per_cell.setdefault((r.dataset, r.split, r.seed), []).append(r)
    assert len(per_cell) == 2 * 2 * 3
    for cell in per_cell.values():
        params = {(r.method, tuple(sorted(r.param_dict.items()))) for r in cell}
        private = {(b, s) for m, p in params if KINDS[m][0] == "private"
                   for b, s in [(dict(p)["budget"], dict(p)["share"])]}
        assert private == {(b, s) for b in BUDGETS for s in SHARES}
        for kind in ("lp", "structural-cs", "lpgnn-labels"):   # all of B on the label
            assert {dict(p)["budget"] for m, p in params if m == kind} == set(BUDGETS)
            assert all("share" not in dict(p) for m, p in params if m == kind)
        assert ("raw", ()) in params                           # the ceiling: no budget
        n_private = sum(KINDS[k][0] == "private" for k in KINDS)
        assert len(cell) == 1 + 3 * len(BUDGETS) + n_private * len(BUDGETS) * len(SHARES)
    assert study.report is budget_split_table


@pytest.mark.parametrize("kwargs, match", [
    ({"shares": [0.0, 0.5]}, "shares"), ({"shares": [1.0]}, "shares"),
    ({"budgets": [0.0, 1.0]}, "budgets"), ({"regimes": ["planetoid"]}, "regimes"),
    ({"kinds": ["gcn"]}, "kinds")])
def test_bad_grid_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        budget_split_study(**kwargs)


def test_quick_run_every_label_sender_spends_exactly_the_budget(tmp_path):
    # German credit (bundled, 1,000 users): one split of B = 2 and all of it on the label
    study = budget_split_study(datasets=["german"], seeds=[0], budgets=[2.0], shares=[0.25],
                               regimes=[RANDOM], kinds=["lp", "lpgnn"])
    res = run_study(study, tmp_path, progress=False)
    assert not res.failed and len(res.done) == 2
    y = np.asarray(load_dataset("german").target)
    train, val, _ = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    for rec in res.records:
        assert rec["eps_spent"] == pytest.approx(2.0)      # the runner's ledger read
        assert rec["metrics"]["max_user_epsilon"] == pytest.approx(2.0)
        assert rec["metrics"]["label_sender_epsilon_min"] == pytest.approx(2.0)
        assert rec["metrics"]["label_senders"] == (train | val).sum()
        assert 0.4 < rec["metrics"]["accuracy"] <= 1.0


def test_ledger_check_fails_when_the_total_is_not_the_budget():
    b = load_dataset("german")
    G, y = b.data.new_simulation(), np.asarray(b.target)
    masks = random_node_split(y, 0.5, 0.25, 0.25, random_state=1)
    out = BudgetRun("lp", budget=1.0, random_state=1).run(G, y, masks)
    assert out["max_user_epsilon"] == pytest.approx(1.0)
    with pytest.raises(AssertionError, match="spent"):
        check_ledger(G, 0.5)          # a user spent more than this
    with pytest.raises(AssertionError, match="label senders"):
        check_ledger(G, 2.0)          # the label senders spent less
    with pytest.raises(AssertionError, match="no user sent a label"):
        check_ledger(b.data.new_simulation(), 1.0)


def test_run_refuses_a_share_that_does_not_fit_its_kind():
    b = load_dataset("german")
    G, y = b.data, np.asarray(b.target)
    masks = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    with pytest.raises(ValueError, match="share"):
        BudgetRun("lp", budget=1.0, share=0.5).run(G.new_simulation(), y, masks)
    with pytest.raises(ValueError, match="share"):
        BudgetRun("lpgnn", budget=1.0, share=0.0).run(G.new_simulation(), y, masks)
    with pytest.raises(ValueError, match="kind"):
        BudgetRun("gcn", budget=1.0).run(G.new_simulation(), y, masks)


def _rec(method, params, seed, acc, val=None):
    return {"dataset": "d", "split": RANDOM, "method": method, "params": params,
            "seed": seed, "metrics": {"accuracy": acc, "val_accuracy": acc if val is None
                                      else val}}


def _records(lp, split, shift=0.0):
    recs = []
    for s, (a, b) in enumerate(zip(lp, split, strict=True)):
        recs += [_rec("lp", {"budget": 2.0}, s, a),
                 # better on test, worse on validation: never chosen
                 _rec("structural-cs", {"budget": 2.0}, s, a + 0.2, val=a - 0.3),
                 _rec("lpgnn", {"budget": 2.0, "share": 0.25}, s, b),
                 _rec("multibit-cs", {"budget": 2.0, "share": 0.25}, s, b - 0.1),
                 _rec("lpgnn", {"budget": 2.0, "share": 0.5}, s, b - 0.2 + shift),
                 _rec("raw", {}, s, 0.9)]
    return recs


def test_verdict_chooses_on_validation_and_pairs_each_split_with_the_label_only_model():
    recs = _records([0.70, 0.72, 0.71], [0.60, 0.61, 0.63])
    (row,) = split_rows(recs)
    assert row["labels"][0] == "lp"          # chosen on validation, not on test
    assert row["shares"][0.25][0][0] == "lpgnn"
    mean, se, n = row["shares"][0.25][1]
    assert n == 3 and mean == pytest.approx(-0.0967, abs=1e-3) and se > 0
    assert row["winner"] == "labels"
    text = budget_split_table(recs)
    assert "| d | 50/25/25 | 2 | label propagation: 71.0 ± 0.8 |" in text
    assert "-9.7 ± " in text and "| labels | raw features → PPR → MLP: 90.0 ± 0.0 |" in text
    # a split within noise: a tie; a split far above: it wins
    assert split_rows(_records([0.70, 0.72, 0.71], [0.75, 0.64, 0.70]))[0]["winner"] == "tie"
    win = split_rows(_records([0.70, 0.72, 0.71], [0.60, 0.61, 0.63], shift=0.35))[0]
    assert win["winner"] == "share 0.5"


def test_cells_table_and_recommender_check_on_cora():
    recs = []
    for s, (lp, split) in enumerate([(0.70, 0.60), (0.72, 0.61), (0.71, 0.63)]):
        recs += [_rec("lp", {"budget": 1.0}, s, lp),
                 _rec("lpgnn", {"budget": 1.0, "share": 0.25}, s, split),
                 _rec("raw", {}, s, 0.9)]
    for r in recs:
        r["dataset"] = "cora"
    table = cells_table(recs, "cora", RANDOM)
    assert "| label propagation | 0 | 71.0 ± 0.8 | 3 |" in table
    assert "| multi-bit → LPGNN | 0.25 | 61.3 ± 1.2 | 3 |" in table
    assert "| raw features → PPR → MLP | — (clean labels, raw features) | 90.0 ± 0.0 | 3 |" in table
    q = public_quantities("cora", RANDOM)
    assert (q["n_nodes"], q["n_features"], q["n_classes"]) == (2708, 1433, 7)
    assert 3.5 < q["mean_degree"] < 4.5 and q["labelled_fraction"] == pytest.approx(0.75)
    assert public_quantities("cora", SCARCE)["labelled_fraction"] == pytest.approx(350 / 2708)
    with pytest.raises(ValueError, match="no recorded shape"):
        public_quantities("nowhere", RANDOM)
    text = recommender_check(recs)
    assert "| cora | 50/25/25 | 1 | 0.00 / 1.00 | labels | yes |" in text
    assert "agrees with the study in 1 of 1 cells" in text


@pytest.mark.parametrize("dataset", sorted(DATASET_SHAPES))
def test_recorded_dataset_shapes_are_the_datasets(dataset, dataset_file):
    """The page's public quantities are written down: they must be those of the data."""
    dataset_file(dataset)   # skips a dataset not available offline
    bunch = load_dataset(dataset)
    y = np.asarray(bunch.target)
    n, d = bunch.data.shape
    assert DATASET_SHAPES[dataset] == (n, d, len(np.unique(y[y >= 0])), int((y >= 0).sum()),
                                       bunch.data.adjacency.nnz)
