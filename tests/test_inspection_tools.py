"""scikit-learn's inspection tools on a GraphData: permutation_importance and
partial_dependence edit columns of a plain array, which graph steps cannot take.

permutation_importance reads a GraphData into an array (a read in the clear of raw
features, charged) and then failed in the pipeline's mechanism with "fitted on other users
... given a plain array" alone: the message now says what happened and what to do.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.inspection import partial_dependence, permutation_importance
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.mechanisms import MultiBitMechanism
from skldp.model_selection import PairData
from skldp.propagation import KProp


def _graph(budget=None):
    rng = np.random.default_rng(0)
    n = 40
    y = np.arange(n) % 2
    X = (rng.random((n, 3)) < 0.2 + 0.6 * (y[:, None] == 1)).astype(float)
    A = np.triu(rng.random((n, n)) < 0.2, 1)
    return GraphData(X, sp.csr_matrix((A | A.T).astype(float)), budget=budget), y


def _pipe():
    return Pipeline([("mech", MultiBitMechanism(4.0, feature_range=(0, 1), random_state=0)),
                     ("kprop", KProp(steps=1)), ("clf", LogisticRegression())])


def test_permutation_importance_on_a_graph_pipeline_says_what_to_do():
    G, y = _graph()
    pipe = _pipe().fit(G[:30], y[:30])
    with pytest.raises(ValueError, match=r"given a plain array.*a scikit-learn tool converted "
                                         r"it.*permutation_importance.*transform\(X\)"):
        permutation_importance(pipe, G[30:], y[30:], n_repeats=2, random_state=0)
    # the conversion was a read of the raw features in the clear: charged
    assert privacy_report(G).local_epsilon == np.inf


def test_permutation_importance_on_what_the_classifier_sees():
    # the recipe of the message: the reports' output is free to permute
    G, y = _graph(budget=10.0)
    pipe = _pipe().fit(G[:30], y[:30])
    Z = pipe[:-1].transform(G[30:])
    result = permutation_importance(pipe[-1], Z, y[30:], n_repeats=3, random_state=0)
    assert result.importances_mean.shape == (3,)
    assert privacy_report(G).local_epsilon == pytest.approx(4.0)
    # a plain estimator on the users' raw features: the array passed explicitly, charged
    G, y = _graph()
    clf = LogisticRegression().fit(np.asarray(G[:30]), y[:30])
    permutation_importance(clf, np.asarray(G[30:]), y[30:], n_repeats=2, random_state=0)
    assert privacy_report(G).local_epsilon == np.inf


def test_graph_steps_given_an_array_say_a_tool_may_have_converted_it():
    G, y = _graph()
    pipe = Pipeline([("kprop", KProp(steps=1)), ("clf", LogisticRegression())])
    with pytest.raises(TypeError, match="a scikit-learn tool converted it to an array.*"
                                        "BaggingClassifier.*charges their users a read in "
                                        "the clear"):
        pipe.fit(np.asarray(G), y)


def test_partial_dependence_says_what_to_do():
    G, y = _graph()
    pipe = _pipe().fit(G[:30], y[:30])
    with pytest.raises(IndexError, match=r"partial_dependence\) cannot inspect graph steps"):
        partial_dependence(pipe, G[30:], [0])
    P = PairData(G, [[0, 1], [2, 3], [4, 5], [6, 7]])
    clf = LogisticRegression().fit(np.ones((4, 3)) * [[0], [1], [0], [1]], [0, 1, 0, 1])
    with pytest.raises(IndexError, match=r"PairData supports row \(pair\) indexing only.*"
                                         r"partial_dependence\) cannot take it"):
        partial_dependence(clf, P, [0])
