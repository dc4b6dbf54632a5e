"""The DP-GNN page: written from its runs file by the study's ``write_page``.

The committed page is what ``write_page`` gives from the committed runs (tables and the
accountants' noise multipliers), the figure is drawn, and a page without its markers is
refused.
"""

import shutil

import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR
from studies.dpgnn import ACCOUNTANT_METHOD, ACCOUNTANTS, EPS, SETTINGS, dpgnn_study, write_page

PAGE = PAGES_DIR / "dpgnn.md"


@pytest.fixture
def records():
    return load_runs(RUNS_DIR / "dpgnn_runs.jsonl", "dpgnn")


def test_the_accountant_table_follows_its_runs(records, tmp_path):
    runs = [r for r in records if r["method"] == ACCOUNTANT_METHOD]
    assert sorted((r["dataset"], r["params"]["eps"]) for r in runs) == sorted(
        (d, e) for d in SETTINGS for e in EPS)
    for r in runs:
        m = r["metrics"]
        # the combined accountant is the per-order minimum: never more noise than either
        assert m["z_combined"] <= min(m["z_wor"], m["z_theorem1"]) * (1 + 1e-3)
        assert m["n_train"] > m["batch_size"] > 0
    # without the twitch runs its rows go, Facebook's stay
    kept = [r for r in records if not (r["method"] == ACCOUNTANT_METHOD
                                       and r["dataset"] == "twitch_ENGB")]
    shutil.copy(PAGE, tmp_path / "dpgnn.md")
    text = write_page(kept, tmp_path)["page"].read_text(encoding="utf-8")
    rows = [line for line in text.splitlines()
            if any(f"| {label} |" in line for label in ACCOUNTANTS.values())]
    assert len(rows) == len(ACCOUNTANTS) and all(r.startswith("| facebook |") for r in rows)


def test_the_accountants_are_one_run_per_dataset_and_eps():
    study = dpgnn_study()
    runs = [s for s in study.runs() if s.method == ACCOUNTANT_METHOD]
    assert len(runs) == len(SETTINGS) * len(EPS) and {s.seed for s in runs} == {0}
    assert all(s.method != ACCOUNTANT_METHOD for s in study.quick_variant().runs())


def test_the_figure_draws_the_current_code_only(records, tmp_path, monkeypatch):
    # the version-1 runs (the † cells) use other code and, for DP-MLP, another accountant
    pytest.importorskip("matplotlib")
    import studies.figures
    from studies.dpgnn import VERSION, _fields, _version, figure
    drawn = {}
    real = studies.figures.curve

    def spy(ax, points, **kw):
        drawn[kw.get("label")] = drawn.get(kw.get("label"), []) + [dict(points)]
        return real(ax, points, **kw)

    monkeypatch.setattr(studies.figures, "curve", spy)
    figure(records, tmp_path)
    rows = [_fields(r) for r in records if r["method"] == "DP-MLP"
            and r["dataset"] == "facebook" and _version(_fields(r)) == VERSION]
    at30 = [r["test"] for r in rows if r["eps"] == 30]
    assert len(at30) == 5
    want = 100 * sum(at30) / len(at30)
    assert drawn["DP-MLP"][0][30.0] == pytest.approx(want)
