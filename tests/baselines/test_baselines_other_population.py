"""Label propagation and C&S place their training labels by node key: a graph of another
population holds the same keys (ids 0..n-1) for other people, and is refused."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skldp import GraphData
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier


@pytest.mark.parametrize("make", [lambda: LabelPropagationClassifier(),
                                  lambda: CorrectAndSmooth(LogisticRegression())],
                         ids=["label_propagation", "correct_and_smooth"])
def test_predict_refuses_another_population(small_graph, make):
    A, X, y = small_graph
    G = GraphData(X, A)
    model = make().fit(G[:40], y[:40])
    other = GraphData(X[::-1].copy(), A)            # other people under the same ids
    with pytest.raises(ValueError, match="another population"):
        model.predict(other[40:])
    assert other.ledger.entries() == []            # refused before any read of their graph
    with pytest.raises(ValueError, match="another population"):
        model.predict(G.new_simulation()[40:])
    # the same users' graph (a view, or one built with population=G) is accepted
    same = GraphData(X, A, population=G)
    np.testing.assert_array_equal(model.predict(same[40:]), model.predict(G[40:]))
