"""Edge cases of PairData: ids of several types, an empty selection, and validation
pairs given in the other orientation to the (undirected) link predictors."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.model_selection import PairData, random_edge_split
from skldp.models import HadamardLinkPredictor, VGAELinkPredictor


def _path(n=4, **kw):
    A = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    return GraphData(np.eye(n), A, **kw)


def test_from_node_ids_with_ids_of_several_types():
    # numbers and text do not sort together, but GraphData accepts such ids
    G = _path(3, node_ids=np.array([1, "b", 2.5], dtype=object))
    P = PairData.from_node_ids(G, np.array([[1, "b"], [2.5, 1]], dtype=object))
    assert P.pairs.tolist() == [[0, 1], [2, 0]]
    # a plain nested list keeps each id's type
    assert PairData.from_node_ids(G, [["b", 2.5]]).pairs.tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="unknown node id 'c'"):
        PairData.from_node_ids(G, np.array([[1, "c"]], dtype=object))
    with pytest.raises(ValueError, match="unknown node id"):
        PairData.from_node_ids(G, [[1, "1"]])   # the text '1' is not the number 1


def test_from_node_ids_of_another_type_is_a_value_error():
    G = _path(3, node_ids=np.array([10, 20, 30]))
    with pytest.raises(ValueError, match="cannot be compared|unknown node id"):
        PairData.from_node_ids(G, [["a", "b"]])
    assert PairData.from_node_ids(G, [[30, 10]]).pairs.tolist() == [[2, 0]]


@pytest.mark.parametrize("pairs", [[[True, 2]], np.array([[True, False]]), [[np.True_, 0]]])
@pytest.mark.parametrize("ids", [np.arange(3), np.array([1, "b", 3.5], dtype=object)])
def test_from_node_ids_refuses_bools(pairs, ids):
    # True compares equal to 1: it was looked up as the node id 1
    with pytest.raises(ValueError, match="True or False, which are not node ids"):
        PairData.from_node_ids(_path(3, node_ids=ids), pairs)


def test_empty_list_selects_no_pair():
    G = _path(4, node_ids=np.arange(4))
    P = PairData(G, [[0, 1], [0, 2]])
    assert G[[]].shape == (0, 4)
    for key in ([], np.array([], dtype=int), (np.array([]), Ellipsis)):
        E = P[key]
        assert isinstance(E, PairData) and E.shape == (0, 4) and E.pairs.shape == (0, 2)
    with pytest.raises(IndexError):
        P[[0.5]]


@pytest.fixture(scope="module")
def split():
    rng = np.random.default_rng(0)
    n = 40
    A = np.triu(rng.random((n, n)) < 0.15, 1)
    A = (A | A.T).astype(float)
    return random_edge_split(GraphData(rng.random((n, 4)), sp.csr_array(A)), 0.1, 0.2,
                             random_state=0)


@pytest.mark.parametrize("make", [
    lambda: HadamardLinkPredictor(epochs=4, random_state=0),
    lambda: VGAELinkPredictor(epochs=4, min_epochs=0, check_every=1, random_state=0)])
def test_validation_pairs_match_in_either_orientation(split, make):
    P_tr, P_va, _, y_tr, y_va, _ = split
    P_fit, y_fit = P_tr.concat(P_va), np.r_[y_tr, y_va]
    ref = make().set_params(validation=P_va.pairs).fit(P_fit, y_fit)
    # the same undirected pairs, given (v, u): the same held-out pairs, the same fit
    rev = make().set_params(validation=P_va.pairs[:, ::-1]).fit(P_fit, y_fit)
    np.testing.assert_array_equal(rev.validation_scores_, ref.validation_scores_)
    np.testing.assert_array_equal(rev.decision_function(P_va), ref.decision_function(P_va))
    # pairs that are not fit pairs in either orientation: the message speaks of pairs
    with pytest.raises(ValueError, match="none of the .* pairs given to fit is a validation "
                                         "pair"):
        make().set_params(validation=P_va.pairs[:, ::-1]).fit(P_tr, y_tr)
    with pytest.raises(ValueError, match="all .* pairs given to fit are validation pairs"):
        make().set_params(validation=P_va.pairs[:, ::-1]).fit(P_va, y_va)
