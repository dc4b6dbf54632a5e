"""A study's runs: canonical keys (a resumed sweep finds its runs again), their order,
the quick variant's grid and configs, the default split and evaluation."""

import numpy as np
import pytest

from skldp.experiments import Method, RunSpec, Study, default_split, fit_and_score


def _factory(ctx):  # pragma: no cover - never built here
    raise AssertionError


def _keys(grid, **kw):
    return [s.key for s in Study("k", ["a"], {"m": Method(_factory, grid)}, seeds=[0],
                                 **kw).runs()]


def test_a_number_names_one_setting_whatever_its_type():
    # a grid edited from [1] to [1.0] (or to numpy values) must find its recorded runs
    assert _keys({"eps": [1]}) == _keys({"eps": [1.0]}) == _keys({"eps": [np.float32(1)]}) \
        == _keys({"eps": [np.int64(1)]})
    assert _keys({"eps": [[1, 2]]}) == _keys({"eps": [[1.0, 2.0]]})
    assert RunSpec("a", "m", "s", 0, (("eps", 1),)).key == \
        RunSpec("a", "m", "s", 0, (("eps", 1.0),)).key


def test_a_bool_is_not_the_number_one():
    assert _keys({"flag": [True]}) != _keys({"flag": [1]})
    assert _keys({"flag": [False]}) != _keys({"flag": [0]})
    assert len(set(_keys({"flag": [True, 1, False, 0]}))) == 4


def test_runs_come_seed_by_seed():
    # each setting gets its first seed before any gets a second one (a partial sweep,
    # max_runs, then has every setting once)
    s = Study("o", ["a", "b"], {"m": Method(_factory, {"eps": [1, 2]})}, seeds=[3, 7])
    seeds = [r.seed for r in s.runs()]
    assert seeds == [3] * 4 + [7] * 4
    assert [(r.dataset, r.param_dict["eps"]) for r in s.runs()[:4]] == [
        ("a", 1), ("a", 2), ("b", 1), ("b", 2)]


def test_quick_grid_replaces_only_the_values_it_names():
    m = Method(_factory, {"eps": [1, 2, 4], "k": [3, 5]})
    s = Study("q", ["a", "b"], {"m": m}, seeds=[0, 1, 2],
              configs={"a": {"x": 1}, "b": {"x": 2}},
              quick={"grid": {"m": {"eps": [1]}}, "datasets": ["a"], "seeds": [0],
                     "configs": {"a": {"y": 3}}})
    q = s.quick_variant()
    assert q.name == "q_quick" and q.quick is None
    assert [r.param_dict for r in q.runs()] == [{"eps": 1, "k": 3}, {"eps": 1, "k": 5}]
    assert q.configs == {"a": {"x": 1, "y": 3}}            # b's settings dropped with b
    assert s.configs == {"a": {"x": 1}, "b": {"x": 2}}     # the study itself unchanged
    assert m.grid == {"eps": [1, 2, 4], "k": [3, 5]}


def test_default_split_is_half_a_quarter_a_quarter_of_the_labelled_nodes():
    y = np.r_[np.arange(200) % 4, -np.ones(40, int)]
    train, val, test = default_split(y, 0)
    assert (train.sum(), val.sum(), test.sum()) == (100, 50, 50)
    assert not (train | val | test)[200:].any()
    assert not (train & val).any() and not (train & test).any() and not (val & test).any()
    again = default_split(y, 0)
    assert all(np.array_equal(a, b) for a, b in zip((train, val, test), again, strict=True))
    assert not np.array_equal(default_split(y, 1)[0], train)


class _Spy:
    """An estimator that remembers which rows it was fitted on and scored on."""

    def fit(self, X, y):
        self.fit_rows = X[:, 0].astype(int).tolist()
        return self

    def score(self, X, y):
        self.score_rows = X[:, 0].astype(int).tolist()
        return 0.25


def test_fit_and_score_fits_on_train_and_validation_and_scores_on_test():
    X = np.arange(8.0)[:, None]
    y = np.zeros(8, int)
    masks = tuple(np.isin(np.arange(8), rows) for rows in ([0, 1, 2], [3, 4], [6, 7]))
    est = _Spy()
    assert fit_and_score(est, X, y, masks) == {"accuracy": pytest.approx(0.25)}
    assert est.fit_rows == [0, 1, 2, 3, 4] and est.score_rows == [6, 7]


@pytest.mark.parametrize("kw, message", [
    # were silently int(s): [0.7, 1.9, True] swept seeds [0, 1, 1]
    ({"seeds": [0, 0.7]}, r"seeds\[1\] must be an integer >= 0, got 0.7"),
    ({"seeds": [True]}, r"seeds\[0\] must be an integer >= 0, got True"),
    # were evaluated twice and recorded once
    ({"seeds": [0, 1, 0]}, "seed 0 is given twice"),
    ({"datasets": ["a", "a"]}, "dataset 'a' is given twice"),
])
def test_seeds_are_integers_and_seeds_and_datasets_are_given_once(kw, message):
    kw = {"datasets": ["a"], **kw}
    with pytest.raises(ValueError, match=message):
        Study("k", methods={"m": Method(_factory)}, **kw)
    assert Study("k", ["a"], {"m": Method(_factory)}, seeds=np.arange(2)).seeds == [0, 1]


def test_a_grid_part_refuses_float_or_repeated_seeds():
    from skldp.experiments import Grid
    with pytest.raises(ValueError, match=r"Grid seeds\[0\] must be an integer"):
        Grid({}, seeds=[0.5])
    with pytest.raises(ValueError, match="Grid: seed 1 is given twice"):
        Grid({}, seeds=[1, 1])
