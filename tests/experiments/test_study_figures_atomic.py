"""A paper study's figure is replaced whole, after its page: a save that fails midway
leaves the old figure (no truncated PNG) and the old page beside it."""

import os
import shutil

import matplotlib.figure
import pytest

from skldp.experiments import load_runs
from studies import PAGES_DIR, RUNS_DIR, write_page

OLD_PNG = b"\x89PNG old figure"


def _failing_savefig(self, fname, *args, **kwargs):
    # half a PNG written, then the disk is full
    if hasattr(fname, "write"):
        fname.write(b"\x89PNG half")
    else:
        with open(fname, "wb") as f:
            f.write(b"\x89PNG half")
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("name, figure", [("budget_split", "fig_budget_split.png"),
                                          ("honest_utility", "honest_utility.png")])
def test_a_failed_figure_leaves_the_old_figure_and_page(tmp_path, monkeypatch, name, figure):
    records = load_runs(RUNS_DIR / f"{name}_runs.jsonl", name)
    shutil.copy(PAGES_DIR / f"{name}.md", tmp_path)
    page = (tmp_path / f"{name}.md").read_bytes()
    (tmp_path / figure).write_bytes(OLD_PNG)
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", _failing_savefig)
    few = [r for r in records if r["seed"] < 2]   # a page that differs from the old one
    with pytest.raises(OSError, match="No space"):
        write_page(name, few, tmp_path)
    assert (tmp_path / figure).read_bytes() == OLD_PNG
    assert (tmp_path / f"{name}.md").read_bytes() == page   # no new page beside the old figure
    assert sorted(os.listdir(tmp_path)) == sorted([f"{name}.md", figure])   # no temp file


def test_a_failed_page_leaves_the_old_figure(tmp_path, monkeypatch):
    import studies.pages as module  # (the page writer budget_split calls)
    records = load_runs(RUNS_DIR / "budget_split_runs.jsonl", "budget_split")
    shutil.copy(PAGES_DIR / "budget_split.md", tmp_path)
    (tmp_path / "fig_budget_split.png").write_bytes(OLD_PNG)

    def fail(path, blocks):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(module, "fill_blocks", fail)
    with pytest.raises(PermissionError):
        write_page("budget_split", records, tmp_path)
    assert (tmp_path / "fig_budget_split.png").read_bytes() == OLD_PNG
    assert sorted(os.listdir(tmp_path)) == ["budget_split.md", "fig_budget_split.png"]


def test_finish_replaces_the_figure_whole(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from studies.figures import finish
    path = tmp_path / "fig.png"
    path.write_bytes(OLD_PNG)
    fig, ax = plt.subplots()
    ax.plot([1, 10], [0.5, 0.7], marker="o", label="m")
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", _failing_savefig)
    with pytest.raises(OSError, match="No space"):
        finish(fig, ax, path, "accuracy")
    assert path.read_bytes() == OLD_PNG and os.listdir(tmp_path) == ["fig.png"]
    assert not plt.fignum_exists(fig.number)   # closed all the same
    monkeypatch.undo()
    fig, ax = plt.subplots()
    ax.plot([1, 10], [0.5, 0.7], marker="o", label="m")
    assert finish(fig, ax, path, "accuracy") == path and path.read_bytes()[:4] == b"\x89PNG"
    assert path.read_bytes() != OLD_PNG
