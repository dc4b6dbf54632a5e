"""The link-prediction page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs, the figure
is drawn, a page without its markers is refused, and the structural floor scores
pairs as its definition says and chooses its score on the validation pairs.
"""

import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR
from studies.link_prediction import (
    SCORES,
    STRUCTURAL,
    StructuralLinkRun,
    link_prediction_study,
    structural_scores,
    write_page,
)

PAGE = PAGES_DIR / "link_prediction.md"


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "link_prediction_runs.jsonl", "link_prediction")


def test_the_tables_follow_the_runs(records, tmp_path):
    kept = [r for r in records if not (r["method"] == STRUCTURAL and r["dataset"] == "cora")]
    shutil.copy(PAGE, tmp_path / "link_prediction.md")
    text = write_page(kept, tmp_path)["page"].read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if "| feature-free: CN / AA / RA |" in line]
    # Cora in both papers' tables (no run left), CiteSeer and Facebook from their runs
    assert [r.split(" | ")[0] for r in rows] == ["| cora", "| citeseer", "| cora", "| facebook"]
    assert rows[0].endswith("| – | – | – | – | – | – |")
    assert "67.6 ± 1.1 (n=5)" in rows[1] and "93.0 ± 0.2 (n=5)" in rows[3]
    assert f"({len(kept)} records;" in text


def test_structural_scores_by_their_definition():
    # a path 0-1-2 and a star 1-3: pair (0, 2) shares node 1 (degree 3), (0, 3) too
    A = sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 1, 1], [0, 1, 0, 0], [0, 1, 0, 0]]))
    s = structural_scores(A, np.array([[0, 2], [0, 3], [0, 1]]))
    np.testing.assert_allclose(s["common neighbours"], [1, 1, 0])
    np.testing.assert_allclose(s["Adamic-Adar"], [1 / np.log(3), 1 / np.log(3), 0])
    np.testing.assert_allclose(s["resource allocation"], [1 / 3, 1 / 3, 0])


def test_the_structural_floor_is_a_method_of_the_study(records):
    assert link_prediction_study().methods[STRUCTURAL].role == "feature-free"
    runs = [r for r in records if r["method"] == STRUCTURAL]
    assert sorted((r["dataset"], r["seed"]) for r in runs) == [
        (d, s) for d in ("citeseer", "cora", "facebook") for s in range(5)]
    for r in runs:
        m = r["metrics"]
        assert m["auc"] == m[f"auc_{int(m['chosen'])}"] and r["eps_spent"] == 0
        assert 0 <= m["chosen"] < len(SCORES)


def test_structural_run_on_a_small_graph(binary_sbm):
    G, _ = binary_sbm(n=150)
    out = StructuralLinkRun(random_state=0).run(G)
    assert out["auc"] == out[f"auc_{int(out['chosen'])}"]
    assert 50 < out["auc"] <= 100   # a block model's edges share neighbours


def test_an_ablation_is_compared_on_its_own_seeds(records):
    # Facebook's pairwise-loss runs have seeds 0-2; its main cells have 5 seeds
    from studies.link_prediction import tables
    pairwise = [r for r in records if r["params"].get("loss") == "pairwise"
                and r["dataset"] == "facebook" and r["method"] == "HDS"]
    seeds = {r["seed"] for r in pairwise}
    base = [r["metrics"]["auc"] for r in records if r["dataset"] == "facebook"
            and r["method"] == "HDS" and r["params"].get("eps") == 1
            and "loss" not in r["params"] and r["seed"] in seeds]
    assert len(base) == len(seeds) < 5
    row = next(line for line in tables(records).splitlines()
               if line.startswith("| PrivGE | facebook | HDS | 1 | loss = pairwise |"))
    assert row.endswith(f"| {np.mean(base):.1f} ± {np.std(base):.1f} (n={len(base)}) |")
