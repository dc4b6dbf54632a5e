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
from studies.privge import LP_ALPHAS, LabelPropagationRun, privge_study, write_page

PAGE = PAGES_DIR / "privge.md"


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "privge_runs.jsonl", "privge")


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
    # the ceiling reads the raw features in the clear: the report column says so (inf)
    ceiling = [line for line in text.splitlines() if "(the ceiling)" in line]
    assert len(ceiling) == 2 and all(line.split(" | ")[4] == "∞ |" for line in ceiling)


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
