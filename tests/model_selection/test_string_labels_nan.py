"""A list of string labels with NaN markers (pandas' ``tolist()`` of missing strings)."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from skldp.base import GraphClassifierMixin
from skldp.model_selection import LabelledKFold, per_class_node_split, random_node_split
from skldp.model_selection._node_splits import _labelled_mask

Y_NAN = ["a", "b", "a", "b", float("nan"), "b", "a", np.nan, "c", "c", "c", "a"]
UNLABELLED = [4, 7]


class _Clf(GraphClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self._encode_labels(y, len(X))
        return self


def test_nan_in_a_list_of_strings_marks_unlabelled_nodes():
    assert np.flatnonzero(~_labelled_mask(Y_NAN)).tolist() == UNLABELLED
    tr, va, te = random_node_split(Y_NAN, 0.5, 0.25, 0.25, random_state=0)
    assert not (tr | va | te)[UNLABELLED].any()
    assert (tr | va | te).sum() == len(Y_NAN) - 2
    tr, va, te = per_class_node_split(Y_NAN, 1, 1, small_classes="shrink", random_state=0)
    assert not (tr | va | te)[UNLABELLED].any()
    folds = [te for _, te in LabelledKFold(2, random_state=0).split(None, Y_NAN)]
    assert sorted(np.concatenate(folds).tolist()) == [i for i in range(12) if i not in UNLABELLED]


def test_pandas_tolist_of_missing_strings_is_split_as_the_series():
    pd = pytest.importorskip("pandas")
    ys = pd.Series(["a", None, "b", "a", "b", None, "a", "b"])
    for a, b in zip(random_node_split(ys.tolist(), random_state=0),
                    random_node_split(ys, random_state=0), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.any([m[[1, 5]] for m in random_node_split(ys.tolist(), random_state=0)])


def test_fit_refuses_nan_in_a_list_of_strings_instead_of_learning_a_class_nan():
    X = np.zeros((len(Y_NAN), 1))
    with pytest.raises(ValueError, match="2 row"):
        _Clf().fit(X, Y_NAN)
    with pytest.raises(ValueError, match="2 row"):
        _Clf().fit(X, tuple(Y_NAN))


@pytest.mark.parametrize("y", [
    ["a", "b", "a"],                       # strings only: the same str array as before
    [0, 1, -1, 2],                         # numbers with a -1 marker
    [0.0, 1.0, float("nan")],              # numbers with a NaN marker
    ["a", None, "b"],                      # None: an object array already
    ["a", 1.5, "nan"],                     # not a marker: unchanged (text "1.5")
    np.array(["a", "nan"]),                # an array: never converted
])
def test_other_labels_give_the_same_array_as_before(y):
    from sklearn.utils.validation import column_or_1d

    from skldp.model_selection._node_splits import _label_column

    got, before = _label_column(y), column_or_1d(y)
    assert got.dtype == before.dtype
    np.testing.assert_array_equal(got, before)


def _estimators():
    from sklearn.linear_model import LogisticRegression

    from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
    from skldp.models import GCNClassifier, MLPHead, RGNNClassifier
    return [LabelPropagationClassifier(), CorrectAndSmooth(LogisticRegression()),
            GCNClassifier(epochs=2, device="cpu"), MLPHead(),
            RGNNClassifier(eps_y=1.0, classes=["a", "b", "c"], alpha=0.0, epochs=2)]


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_estimators_refuse_nan_in_a_list_of_strings(est):
    # pandas' tolist() of missing strings: the NaN was the text "nan", a class of its own
    import scipy.sparse as sp

    from skldp import GraphData
    n = 30
    A = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    G = GraphData(np.random.default_rng(0).random((n, 4)), A)
    ys = [["a", "b", "c"][i % 3] for i in range(n)]
    ys[5] = float("nan")
    with pytest.raises(ValueError, match="unlabelled"):
        est.fit(G, ys)


def _run_advice(err, ns):
    """Run the code the "unlabelled" error suggests, as a reader would paste it, keeping
    the selection it ends with (``Gk, yk``)."""
    code = str(err).split("fit only on labelled nodes, e.g. ")[1].rstrip(".")
    *first, last = code.split("; ")
    exec("; ".join([*first, f"Gk, yk = {last}"]), ns)
    return ns["Gk"], ns["yk"]


@pytest.mark.parametrize("as_list", [False, True])
@pytest.mark.parametrize("pandas", [True, False])
def test_the_unlabelled_error_suggests_a_mask_that_works_for_string_labels(
        as_list, pandas, monkeypatch):
    # it suggested G[y >= 0], which raises a TypeError on strings
    import sys

    import scipy.sparse as sp

    from skldp import GraphData
    from skldp.baselines import LabelPropagationClassifier
    if not pandas:
        monkeypatch.delitem(sys.modules, "pandas", raising=False)
    pd = pytest.importorskip("pandas") if pandas else None
    G = GraphData(np.random.default_rng(0).random((4, 1)),
                  sp.csr_array(np.ones((4, 4)) - np.eye(4)))
    y = ["cat", None, "dog", np.nan] if as_list else \
        np.array(["cat", None, "dog", np.nan], dtype=object)
    with pytest.raises(ValueError, match=r"2 row\(s\) unlabelled .*: None, nan; ") as info:
        LabelPropagationClassifier().fit(G, y)
    # (pd.notna only for labels holding pandas' NA: a user of None and NaN may lack pandas)
    assert "y >= 0" not in str(info.value) and "pd.notna" not in str(info.value)
    Gk, yk = _run_advice(info.value, {"np": np, "pd": pd, "G": G, "y": y})
    assert Gk.rows.tolist() == [0, 2]
    LabelPropagationClassifier().fit(Gk, yk)


@pytest.mark.parametrize("as_list", [False, True])
def test_the_unlabelled_error_keeps_y_ge_0_for_numeric_labels(as_list):
    import scipy.sparse as sp

    from skldp import GraphData
    from skldp.baselines import LabelPropagationClassifier
    G = GraphData(np.random.default_rng(0).random((4, 1)),
                  sp.csr_array(np.ones((4, 4)) - np.eye(4)))
    y = [0, -1, 1, -1] if as_list else np.array([0, -1, 1, np.nan])
    with pytest.raises(ValueError, match=r"e\.g\. y = np\.asarray\(y\); G\[y >= 0\], "
                                         r"y\[y >= 0\]\.$") as info:
        LabelPropagationClassifier().fit(G, y)
    Gk, yk = _run_advice(info.value, {"np": np, "G": G, "y": y})
    assert Gk.rows.tolist() == [0, 2]
    LabelPropagationClassifier().fit(Gk, yk)


def test_the_advice_for_numbers_with_none_markers_works():
    # Before: integers with None (JSON's null) got the text labels' advice, whose mask kept
    # the integers as objects (an unknown label type) and kept -1.
    import re

    from skldp import GraphData
    from skldp.baselines import LabelPropagationClassifier
    y = [0, 1, None, -1, 1, 0]
    G = GraphData(np.zeros((6, 1)), np.ones((6, 6)) - np.eye(6))
    with pytest.raises(ValueError) as err:
        LabelPropagationClassifier().fit(G, y)
    pd = pytest.importorskip("pandas")
    advice = re.search(r"e\.g\. (keep = .*)\.$", str(err.value))[1]
    scope = {"np": np, "pd": pd, "G": G, "y": y}
    exec(advice.split("; ", 1)[0], scope)   # keep = ...
    Gk, yk = eval(advice.split("; ", 1)[1], scope)
    assert scope["keep"].tolist() == [True, True, False, False, True, True]
    LabelPropagationClassifier().fit(Gk, yk)
