"""The PrivGE page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs (so the page
cannot disagree with its runs), the figure is drawn, a page without its markers is
refused, and the feature-free method chooses its alpha on the validation nodes.
"""

import shutil

import numpy as np
import pytest

from skldp.experiments import load_runs
from skldp.model_selection import random_node_split
from studies import PAGES_DIR, RUNS_DIR
from studies import write_page as write_any_page
from studies.privge import LP_ALPHAS, LabelPropagationRun, privge_study, write_page

PAGE = PAGES_DIR / "privge.md"


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "privge_runs.jsonl", "privge")


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
    assert blank != committed.decode("utf-8") and "<!-- generated: table -->" in blank
    (tmp_path / "privge.md").write_text(blank, encoding="utf-8")
    paths = write_page(records, tmp_path)
    assert paths["page"] == tmp_path / "privge.md"
    assert paths["page"].read_bytes() == committed
    # the registry's write_page is this one
    shutil.copy(PAGE, tmp_path / "privge.md")
    write_any_page("privge", records, tmp_path)
    assert (tmp_path / "privge.md").read_bytes() == committed


def test_the_table_follows_the_runs(records, tmp_path):
    # drop the Facebook label propagation runs: its cell goes, the others stay
    kept = [r for r in records if not (r["dataset"] == "facebook"
                                        and r["method"] == "label-propagation")]
    shutil.copy(PAGE, tmp_path / "privge.md")
    text = write_page(kept, tmp_path)["page"].read_text(encoding="utf-8")
    lp_rows = [line for line in text.splitlines() if line.startswith("| label propagation")]
    assert lp_rows[0].split(" | ")[3] == "85.0 ± 1.0 (n=5)"      # Cora
    assert lp_rows[1].split(" | ")[3] == "—"                      # Facebook: no run
    assert f"({len(kept)} records;" in text


def test_write_page_draws_the_figure(records, tmp_path):
    pytest.importorskip("matplotlib")
    shutil.copy(PAGE, tmp_path / "privge.md")
    paths = write_page(records, tmp_path)
    assert paths["figure"] == tmp_path / "privge.png"
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_page_without_its_markers_is_refused(records, tmp_path):
    page = tmp_path / "privge.md"
    page.write_text("# PrivGE\n\nNo generated block here.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"privge.md: no block \['command', 'figure', 'table'\]"):
        write_page(records, tmp_path)
    assert page.read_text(encoding="utf-8") == "# PrivGE\n\nNo generated block here.\n"


def test_the_feature_free_floor_is_a_method_of_the_study(records):
    method = privge_study().methods["label-propagation"]
    assert method.role == "feature-free"
    lp = [r for r in records if r["method"] == "label-propagation"]
    assert sorted((r["dataset"], r["seed"]) for r in lp) == [
        (d, s) for d in ("cora", "facebook") for s in range(5)]
    assert all(r["metrics"]["alpha"] in LP_ALPHAS and r["eps_spent"] == 0 for r in lp)


def test_label_propagation_chooses_alpha_on_the_validation_nodes(binary_sbm):
    from skldp.baselines import LabelPropagationClassifier
    G, y = binary_sbm(n=120)
    masks = random_node_split(y, 0.5, 0.25, 0.25, random_state=0)
    tr, va, te = masks
    out = LabelPropagationRun().run(G, y, masks)
    val = [LabelPropagationClassifier(alpha=a).fit(G[tr], y[tr]).score(G[va], y[va])
           for a in LP_ALPHAS]
    assert out["alpha"] == LP_ALPHAS[int(np.argmax(val))]
    assert out["val_accuracy"] == pytest.approx(max(val))
    best = LabelPropagationClassifier(alpha=out["alpha"]).fit(G[tr], y[tr])
    assert out["accuracy"] == pytest.approx(best.score(G[te], y[te]))
