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
from studies import write_page as write_any_page
from studies.lpgnn import BENCH, OPTIONS, LPGNNRun, label_propagation, lpgnn_study, write_page

PAGE = PAGES_DIR / "lpgnn.md"
BLOCKS = ["authors", "bench", "command", "figure", "lpgnn", "papers", "settings", "table"]


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "lpgnn_runs.jsonl", "lpgnn")


def _blank_blocks(text):
    """The page with every generated block emptied (its hand-written text kept)."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("<!-- end generated"):
            inside = False
        if not inside:
            out.append(line)
        if line.startswith("<!-- generated:"):
            inside = True
    return "".join(out)


def test_write_page_gives_back_the_committed_page(records, tmp_path):
    committed = PAGE.read_bytes()
    blank = _blank_blocks(committed.decode("utf-8"))
    assert blank != committed.decode("utf-8")
    assert all(f"<!-- generated: {b} -->" in blank for b in BLOCKS)
    (tmp_path / "lpgnn.md").write_text(blank, encoding="utf-8")
    paths = write_page(records, tmp_path)
    assert paths["page"] == tmp_path / "lpgnn.md"
    assert paths["page"].read_bytes() == committed
    # the registry's write_page is this one
    shutil.copy(PAGE, tmp_path / "lpgnn.md")
    write_any_page("lpgnn", records, tmp_path)
    assert (tmp_path / "lpgnn.md").read_bytes() == committed


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


def test_write_page_draws_the_figure(records, tmp_path):
    pytest.importorskip("matplotlib")
    shutil.copy(PAGE, tmp_path / "lpgnn.md")
    paths = write_page(records, tmp_path)
    assert paths["figure"] == tmp_path / "fig_lpgnn.png"
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_page_without_its_markers_is_refused(records, tmp_path):
    page = tmp_path / "lpgnn.md"
    page.write_text("# LPGNN\n\nNo generated block here.\n", encoding="utf-8")
    missing = ", ".join(map(repr, BLOCKS))
    with pytest.raises(ValueError, match=rf"lpgnn.md: no block \[{missing}\]"):
        write_page(records, tmp_path)
    assert page.read_text(encoding="utf-8") == "# LPGNN\n\nNo generated block here.\n"


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
