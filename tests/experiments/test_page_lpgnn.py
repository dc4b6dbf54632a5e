"""The LPGNN page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs (so the page
cannot disagree with its runs), the figure is drawn, a page without its markers is
refused, and the rows that used to come from other scripts are runs of the study.
"""

import shutil

import numpy as np
import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR
from studies.lpgnn import BENCH, OPTIONS, LPGNNRun, label_propagation, lpgnn_study, write_page

PAGE = PAGES_DIR / "lpgnn.md"
BLOCKS = ["authors", "bench", "command", "figure", "lpgnn", "papers", "settings", "table"]


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "lpgnn_runs.jsonl", "lpgnn")


def test_the_tables_follow_the_runs(records, tmp_path):
    # drop CiteSeer's label propagation on the Planetoid split: its cell goes, Cora's stays
    kept = [r for r in records if not (r["dataset"] == "citeseer"
                                        and r["method"] == "LABEL-PROPAGATION"
                                        and r["params"]["part"] == "table2")]
    shutil.copy(PAGE, tmp_path / "lpgnn.md")
    text = write_page(kept, tmp_path)["page"].read_text(encoding="utf-8")
    rows = [line.split(" | ") for line in text.splitlines()
            if line.startswith(("| cora | label propagation", "| citeseer | label propagation"))]
    cora = next(r for r in records if r["dataset"] == "cora"
                and r["method"] == "LABEL-PROPAGATION" and r["params"]["part"] == "table2")
    assert rows[0][4] == f"{100 * cora['metrics']['accuracy']:.1f} ± 0.0 (n=1)"
    assert rows[1][4] == "—"
    assert f"({len(kept)} records;" in text


def test_every_row_of_the_page_is_a_run_of_the_study(records):
    study = lpgnn_study()
    assert study.methods["LABEL-PROPAGATION"].role == "feature-free"
    assert {s.key for s in study.runs()} == {r["key"] for r in records}
    lp = [r for r in records if r["method"] == "LABEL-PROPAGATION"]
    assert all(r["metrics"]["alpha"] in (0.5, 0.8, 0.9, 0.99) and r["eps_spent"] == 0
               for r in lp if r["params"].get("eps_y") in (None, float("inf")))
    bench = {r["method"] for r in records if r["params"]["part"] == "bench"}
    assert bench == set(OPTIONS) and {r["dataset"] for r in records
                                      if r["params"]["part"] == "bench"} == {"cora"}


def test_the_bench_part_runs_the_benchmark_settings(binary_sbm):
    G, y = binary_sbm(n=90)
    run = LPGNNRun(kind="LPGNN-SYM", part="bench", eps_x=float("inf"), eps_y=1.0)
    out = run.run(G, y, _split(y))
    assert 0 <= out["accuracy"] <= 1
    params = run.model_.get_params()
    assert {k: params[k] for k in BENCH} == BENCH
    assert params["normalization"] == "sym" and params["propagate_predictions"] is False


def test_label_propagation_chooses_alpha_on_the_randomized_validation_labels(binary_sbm):
    from skldp.baselines import LabelPropagationClassifier
    G, y = binary_sbm(n=120)
    masks = _split(y)
    tr, va, te = masks
    out = label_propagation(G, y, masks, None, 0)
    val = [LabelPropagationClassifier(alpha=a).fit(G[tr], y[tr]).score(G[va], y[va])
           for a in (0.5, 0.8, 0.9, 0.99)]
    assert out["alpha"] == (0.5, 0.8, 0.9, 0.99)[int(np.argmax(val))]
    assert out["val_accuracy"] == pytest.approx(max(val))
    # with private labels the validation score reads randomized labels: not the clean one
    noisy = label_propagation(G, y, masks, 0.5, 0)
    assert 0 <= noisy["accuracy"] <= 1 and noisy["alpha"] in (0.5, 0.8, 0.9, 0.99)


def _split(y):
    from skldp.model_selection import random_node_split
    return random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
