"""A call refused for bad arguments charges nothing: its checks come before any read. A
refusal that depends on the users' values is a read of them (here for the edges; all of
them in test_refusals_are_reads.py)."""

import numpy as np
import pytest
import scipy.sparse as sp
from public_feature_graphs import public_feature_graph

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import EdgeRR
from skldp.metrics import mae_by_degree
from skldp.model_selection import (
    per_class_node_split,
    random_edge_split,
    random_node_split,
    sample_non_edges,
)


def _directed(budget=None):
    G = public_feature_graph(budget=budget)
    return GraphData(G.features, sp.triu(G.adjacency, k=1, format="csr"), budget=budget)


EDGE_CASES = {   # (graph, call, the error the call must meet)
    "sample_non_edges, more than all pairs": (
        public_feature_graph, lambda G: sample_non_edges(G, 10 ** 6), "node pairs"),
    "random_edge_split, bad fraction": (
        public_feature_graph, lambda G: random_edge_split(G, val_size=-0.1), "val_size"),
    "random_edge_split, fractions over 1": (
        public_feature_graph, lambda G: random_edge_split(G, 0.5, 0.6), "< 1"),
    # a numpy Generator was refused by check_random_state after the charged read
    "random_edge_split, a Generator": (
        public_feature_graph,
        lambda G: random_edge_split(G, random_state=np.random.default_rng(0)),
        "random_state must be an int"),
    "sample_non_edges, a Generator": (
        public_feature_graph,
        lambda G: sample_non_edges(G, 5, random_state=np.random.default_rng(0)),
        "random_state must be an int"),
}


@pytest.mark.filterwarnings("ignore:EdgeRR")   # (the directed graph's warning)
@pytest.mark.parametrize("case", sorted(EDGE_CASES))
@pytest.mark.parametrize("budget", [None, 1.0])
def test_a_refused_read_of_the_true_graph_is_not_charged(case, budget):
    # Before: the true graph's read was charged (edges inf) before the input was checked;
    # under a budget the call met BudgetExceededError instead of the input's error.
    make, call, error = EDGE_CASES[case]
    G = make(budget)
    EdgeRR(1.0, symmetrize="directed", random_state=0).fit_transform(G)
    entries = len(G.ledger)
    with pytest.raises(ValueError, match=error):
        call(G)
    assert len(G.ledger) == entries


EDGE_DEPENDENT = {   # refusals that tell something of the edges
    # more non-edges than this graph has (fewer than its node pairs): tells the edge count
    "too many non-edges": (public_feature_graph,
                           lambda G: sample_non_edges(G, G.n_nodes * (G.n_nodes - 1) // 2),
                           "non-edges but the graph has only"),
    # one user listing a neighbour who does not list them back makes the graph directed
    "directed": (_directed, lambda G: sample_non_edges(G, 5), "undirected graph"),
    # the same refusal where a step requires a symmetric graph (it was free: audit 4.07
    # against a printed 1 for random_edge_split)
    "directed, edge split": (_directed, random_edge_split, "undirected graph"),
    "directed, EdgeRR 'or'": (_directed, lambda G: EdgeRR(1.0).fit(G), "undirected"),
}


@pytest.mark.filterwarnings("ignore:EdgeRR")
@pytest.mark.parametrize("case", sorted(EDGE_DEPENDENT))
def test_a_refusal_that_depends_on_the_edges_is_charged(case):
    # The refusal is an answer about the true edges: the read it needed is charged, as
    # an answer would be (an audit of refused/answered on neighbouring graphs bounds
    # the loss above 4 for the printed 1 were it free).
    make, call, error = EDGE_DEPENDENT[case]
    G = make()
    EdgeRR(1.0, symmetrize="directed", random_state=0).fit_transform(G)
    with pytest.raises(ValueError, match=error):
        call(G)
    assert privacy_report(G).epsilon_for("edges") == np.inf


LABEL_CASES = {
    "random_node_split": lambda G: random_node_split(G),
    "per_class_node_split": lambda G: per_class_node_split(G),
    "mae_by_degree(mae=G)": lambda G: mae_by_degree(G, np.ones(G.n_nodes)),
    "mae_by_degree(degree=G)": lambda G: mae_by_degree(np.ones(G.n_nodes), G),
}


@pytest.mark.parametrize("case", sorted(LABEL_CASES))
@pytest.mark.parametrize("budget", [None, 1.0])
def test_a_graph_given_for_an_array_is_refused_before_its_features_are_read(case, budget):
    # Before: np.asarray(G) charged its users' features a read in the clear (epsilon
    # inf; BudgetExceededError under a budget), then the call failed on the shape.
    G = GraphData(np.random.default_rng(0).random((10, 2)), sp.eye(10, format="csr"),
                  budget=budget)
    with pytest.raises(TypeError, match="GraphData"):
        LABEL_CASES[case](G)
    assert len(G.ledger) == 0
