"""Method grids made of parts (Grid): union of products, scoped to datasets, seeds, splits."""

import numpy as np
import pytest

from skldp.experiments import Grid, Method, Study
from skldp.experiments._runner import _split


def _factory(ctx):  # pragma: no cover - never built here
    raise AssertionError


def test_parts_union_and_scopes():
    m = Method(_factory, [Grid({"eps": [1, 2]}),
                          Grid({"eps": [1], "extra": [10]}, datasets=["b"], seeds=[1]),
                          Grid({"eps": [2]})])  # overlaps the first part: counted once
    s = Study("t", ["a", "b"], {"m": m}, seeds=[0, 1], splits={"s1": None, "s2": None})
    keys = [r.key for r in s.runs()]
    assert len(keys) == len(set(keys))
    # 2 datasets x 2 seeds x 2 splits x 2 eps, plus the scoped part on b, seed 1, both splits
    assert len(keys) == 16 + 2
    extra = [r for r in s.runs() if "extra" in r.param_dict]
    assert {(r.dataset, r.seed) for r in extra} == {("b", 1)}
    only_s2 = Study("t", ["a"], {"m": Method(_factory, [Grid({"eps": [1]}, splits="s2")])},
                    seeds=[0], splits={"s1": None, "s2": None})
    assert [r.split for r in only_s2.runs()] == ["s2"]


def test_plain_dict_grid_unchanged():
    m = Method(_factory, {"eps": [1, 2]})
    assert m.grid == {"eps": [1, 2]} and len(m.parts) == 1
    with pytest.raises(ValueError, match="empty"):
        Method(_factory, [])


def test_quick_variant_on_parts():
    m = Method(_factory, [Grid({"eps": [1, 2], "k": [3]}, seeds=[0]), Grid({"eps": [5]})])
    s = Study("t", ["a"], {"m": m}, seeds=[0, 1], quick={"grid": {"m": {"eps": [9]}}})
    q = s.quick_variant()
    assert {r.param_dict["eps"] for r in q.runs()} == {9}
    assert [p.seeds for p in q.methods["m"].grid] == [[0], None]
    s2 = Study("t", ["a"], {"m": m}, seeds=[0], quick={"grid": {"m": [Grid({"eps": [7]})]}})
    assert [r.param_dict for r in s2.quick_variant().runs()] == [{"eps": 7}]


def test_split_receives_dataset_when_it_asks():
    from skldp.experiments import RunSpec
    spec = RunSpec("cora", "m", "s", 3)
    seen = {}

    def with_name(y, seed, dataset):
        seen["args"] = (seed, dataset)
        return y

    def plain(y, seed):
        return seed

    y = np.zeros(3)
    assert _split(with_name, y, spec) is y and seen["args"] == (3, "cora")
    assert _split(plain, y, spec) == 3


@pytest.mark.parametrize("methods, splits, error", [
    ({1: Method(_factory)}, None, TypeError),        # a record's method must be a string
    ({"": Method(_factory)}, None, ValueError),
    ({"m": Method(_factory)}, {("a", "b"): None}, TypeError),
    ({"m": Method(_factory)}, {"": None}, ValueError),
])
def test_method_and_split_names_are_non_empty_strings(methods, splits, error):
    # accepted before, the run ran and then its record was refused by the runs file
    # ("its 'method' is 1, not a non-empty string"), stopping the sweep
    kw = {} if splits is None else {"splits": splits}
    with pytest.raises(error, match="name"):
        Study("t", ["a"], methods, seeds=[0], **kw)


def test_names_with_a_bar_are_refused_they_could_share_a_key():
    # method 'm|s1' on split 's2' and method 'm' on split 's1|s2' had the one key
    # 'a|m|s1|s2|0|{}': the second run was never recorded
    with pytest.raises(ValueError, match=r"without '\|'"):
        Study("t", ["a"], {"m|s1": Method(_factory), "m": Method(_factory)}, seeds=[0],
              splits={"s2": None})
    with pytest.raises(ValueError, match=r"without '\|'"):
        Study("t", ["a"], {"m": Method(_factory)}, seeds=[0], splits={"s1|s2": None})
