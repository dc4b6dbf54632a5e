"""summarize and summary_markdown: groups, eps spent, row order and the printed numbers."""

import contextlib
import math
import os

import pytest

from skldp.experiments import summarize, summary_markdown


def _rec(acc, seed=0, params=None, split="random", spent=None, method="m", dataset="d"):
    return {"dataset": dataset, "method": method, "split": split, "seed": seed,
            "params": {} if params is None else params, "metrics": {"accuracy": acc},
            "eps_spent": spent}


def test_eps_spent_is_the_largest_over_the_seeds_none_when_unknown():
    rows = summarize([_rec(0.5, 0, spent=1.0), _rec(0.5, 1, spent=3.0), _rec(0.5, 2, spent=2.0),
                      _rec(0.5, 3, spent=None)])
    assert [r["eps_spent"] for r in rows] == [3.0]
    assert summarize([_rec(0.5, 0), _rec(0.5, 1)])[0]["eps_spent"] is None
    # a seed without a figure does not lower it
    assert summarize([_rec(0.5, 0, spent=None), _rec(0.5, 1, spent=0.5)])[0]["eps_spent"] \
        == 0.5


def test_eps_spent_adds_a_central_training_to_the_local_reports():
    # a central DP training (DP-GNN, DP-MLP) spends no local epsilon: the runner records
    # eps_spent 0 and its epsilon under privacy["central_epsilon"]; the table said 0
    def central(seed, local, eps):
        rec = _rec(0.5, seed, params={"eps": 1.0}, spent=local)
        rec["privacy"] = {"local_epsilon": local, "central_epsilon": eps,
                          "central_delta": 1e-3}
        return rec

    rows = summarize([central(0, 0.0, 0.9999), central(1, 0.0, 0.9998)])
    assert rows[0]["eps_spent"] == pytest.approx(0.9999)
    assert "| 0.9999 |" in summary_markdown(rows)
    assert summarize([central(0, 2.0, 1.0)])[0]["eps_spent"] == pytest.approx(3.0)
    # a run whose report failed (eps_spent None) stays unknown
    assert summarize([central(0, None, 1.0)])[0]["eps_spent"] is None


def test_each_split_is_its_own_row():
    rows = summarize([_rec(0.2, 0, split="public"), _rec(0.8, 0, split="random"),
                      _rec(0.4, 1, split="public")])
    assert [(r["split"], r["n"], r["mean"]) for r in rows] == [
        ("public", 2, pytest.approx(0.3)), ("random", 1, pytest.approx(0.8))]


def test_an_int_and_its_float_are_one_setting_as_the_runner_keys_them():
    # a grid [1, 2] swept again as [1.0, 2.0] adds seeds to the same runs: one row each
    rows = summarize([_rec(0.2, 0, params={"alpha": 1}), _rec(0.4, 1, params={"alpha": 1.0}),
                      _rec(0.6, 0, params={"k": [1, 2.0]}), _rec(0.8, 1, params={"k": [1.0, 2]})])
    assert [(r["params"], r["n"], r["seeds"]) for r in rows] == [
        ({"alpha": 1}, 2, [0, 1]), ({"k": [1, 2.0]}, 2, [0, 1])]
    assert rows[0]["mean"] == pytest.approx(0.3)
    # ints that no float equals stay apart (2**53 + 1 reads 2**53 as a float), or whole
    rows = summarize([_rec(0.2, params={"n": 2**53}), _rec(0.8, params={"n": 2**53 + 1}),
                      _rec(0.5, params={"n": 10**400})])
    assert [r["n"] for r in rows] == [1, 1, 1]


def test_a_grid_value_named_eps_is_the_declared_eps():
    rows = summarize([_rec(0.5, params={"eps": 2.0}), _rec(0.5, params={"eps": 0.5}),
                      _rec(0.5, params={"clf__eps_scale": 9.0})])
    assert [r["eps"] for r in rows] == [0.5, 2.0, None]


def test_rows_with_another_eps_come_before_rows_without_one():
    rows = summarize([_rec(0.5, params={}), _rec(0.5, params={"hds__eps": "auto"}),
                      _rec(0.5, params={"hds__eps": math.inf}),
                      _rec(0.5, params={"hds__eps": 1.0})])
    assert [r["eps"] for r in rows] == [1.0, math.inf, "auto", None]


def test_markdown_scales_mean_and_std():
    rows = summarize([_rec(0.4, 0, spent=1.0), _rec(0.6, 1, spent=1.0)])
    assert rows[0]["std"] == pytest.approx(0.1)
    text = summary_markdown(rows)
    assert "| m | random | — | 50.0 ± 10.0 | 2 | 1 |" in text.splitlines()
    text = summary_markdown(rows, scale=1.0, digits=3, labels={"m": "Method M"})
    assert "| Method M | random | — | 0.500 ± 0.100 | 2 | 1 |" in text.splitlines()


def test_a_record_without_dataset_or_method_or_with_list_params_is_refused():
    # were a bare KeyError 'dataset' and an AttributeError on params.items()
    bare = {"key": "k1", "metrics": {"accuracy": 0.5}}
    with pytest.raises(ValueError, match="record 'k1' has no 'dataset' string"):
        summarize([bare])
    with pytest.raises(ValueError, match="record 'k1' has no 'method' string"):
        summarize([{**bare, "dataset": "cora"}])
    with pytest.raises(ValueError, match=r"record 'k1': its 'params' is \[1, 2\], not a dict"):
        summarize([{**bare, "dataset": "cora", "method": "m", "params": [1, 2]}])


def test_a_declared_eps_that_is_not_a_number_is_drawn_without_eps(tmp_path):
    # was TypeError from math.isfinite("auto") when the figure was drawn
    pytest.importorskip("matplotlib")
    from skldp.experiments import plot_summary
    rows = summarize([_rec(0.5, params={"hds__eps": "auto"}), _rec(0.6, params={"hds__eps": 1.0}),
                      _rec(0.7, params={"hds__eps": True})])
    assert plot_summary(rows, tmp_path / "f.png").exists()


def _old_files(tmp_path, name):
    fig, md = tmp_path / f"{name}.png", tmp_path / f"{name}_summary.md"
    fig.write_bytes(b"the old figure")
    md.write_text("the old summary\n")
    return fig, md


def test_a_summary_that_cannot_be_written_leaves_the_old_figure_beside_it(tmp_path,
                                                                           monkeypatch):
    # the figure was saved in place, before the summary: a failure writing the summary
    # left a new figure beside the old summary
    pytest.importorskip("matplotlib")
    from skldp.experiments import Method, Study, _summary, write_summary

    study = Study("pair", ["cora"], {"m": Method(lambda ctx: None)})
    fig, md = _old_files(tmp_path, "pair")

    def full_disk(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_summary, "replace_text", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_summary(study, [_rec(0.5, params={"m__eps": 1.0})], tmp_path)
    assert fig.read_bytes() == b"the old figure"
    assert md.read_text() == "the old summary\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pair.png", "pair_summary.md"]
    monkeypatch.undo()
    paths = write_summary(study, [_rec(0.5, params={"m__eps": 1.0})], tmp_path)
    assert paths["figure"].read_bytes().startswith(b"\x89PNG")
    assert "![accuracy against ε](pair.png)" in md.read_text()


def test_a_figure_that_fails_midway_leaves_the_old_one(tmp_path, monkeypatch):
    # savefig wrote into the figure itself: a failure midway left it truncated
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from skldp.experiments import plot_summary

    fig, _ = _old_files(tmp_path, "f")

    def fails_midway(self, fname, **kwargs):
        with open(fname, "wb") if isinstance(fname, (str, bytes, os.PathLike)) \
                else contextlib.nullcontext(fname) as f:
            f.write(b"\x89PNG half")
        raise RuntimeError("killed midway")

    monkeypatch.setattr(Figure, "savefig", fails_midway)
    with pytest.raises(RuntimeError, match="killed midway"):
        plot_summary(summarize([_rec(0.5, params={"eps": 1.0})]), fig)
    assert fig.read_bytes() == b"the old figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png", "f_summary.md"]


@pytest.mark.parametrize("eps", [0.0, -1.0])
def test_a_private_row_at_eps_not_above_zero_is_refused_not_left_off_the_axis(tmp_path, eps):
    # the point was drawn on the log axis, which left it off without a word
    pytest.importorskip("matplotlib")
    from skldp.experiments import Method, Study, plot_summary, write_summary

    records = [_rec(0.5, params={"m__eps": eps}), _rec(0.6, params={"m__eps": 1.0})]
    with pytest.raises(ValueError, match=r"1 row\(s\) of private methods have eps <= 0 "
                                         r"\(e\.g\. 'm' on 'd' at eps = "):
        plot_summary(summarize(records), tmp_path / "f.png")
    study = Study("zero", ["d"], {"m": Method(lambda ctx: None)})
    with pytest.raises(ValueError, match="eps axis is logarithmic"):
        write_summary(study, records, tmp_path)
    assert not list(tmp_path.iterdir())
    # a baseline is a horizontal line, whatever its eps
    assert plot_summary(summarize(records), tmp_path / "f.png", roles={"m": "baseline"})
