"""Labels given as a pandas Series indexed by user ids: read in X's row order or refused."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_selection import SelectKBest

from skldp import GraphData
from skldp.base import NodeWise
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.central import DPGNNClassifier, DPMLPClassifier
from skldp.mechanisms import LabelRandomizedResponse
from skldp.models import GCNClassifier, LPGNNClassifier, MLPHead, SolitudeClassifier

pd = pytest.importorskip("pandas")

N = 40
IDS = [f"u{i}" for i in range(N)]


def _graph():
    rng = np.random.default_rng(0)
    A = sp.random(N, N, density=0.15, random_state=0, format="csr")
    A = ((A + A.T) > 0).astype(float)
    G = GraphData(rng.normal(size=(N, 3)), A, node_ids=IDS)
    y = pd.Series(np.arange(N) % 2, index=IDS)
    return G, y, rng.permutation(N)


ESTIMATORS = [
    GCNClassifier(epochs=2),
    MLPHead(epochs=2),
    LPGNNClassifier(epochs=2, eps_y=1.0, classes=[0, 1]),
    SolitudeClassifier(epochs=2),
    LabelPropagationClassifier(),
    CorrectAndSmooth(MLPHead(epochs=2)),
    DPGNNClassifier(epochs=1, classes=[0, 1], batch_size=10),
    DPMLPClassifier(epochs=1, classes=[0, 1], batch_size=10, accountant="hypergeometric"),
]


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_a_series_indexed_by_other_users_is_refused(est):
    # Read by position, user ids[perm[0]] would be fitted on user u0's label (and a label
    # mechanism would send u0's label in that user's name).
    G, y, perm = _graph()
    X = G[perm]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"Series indexed by the users of X's rows, but "
                                             r"in another order.*y\.loc\[X\.node_ids\]"):
            est.fit(X, y)
        assert G.ledger.entries() == []          # refused before any label was sent
        est.fit(X, y.loc[X.node_ids])            # in X's order: fitted
        with pytest.raises(ValueError, match="Series indexed by the users"):
            est.score(X, y)
        assert est.score(X, y.loc[X.node_ids]) == est.score(X, y.loc[X.node_ids].to_numpy())


def test_a_series_indexed_by_other_users_ids_is_refused():
    # ids of users of the graph, but not (all) of X's: read by position, X's first user
    # would be fitted on another user's label
    G, y, perm = _graph()
    X = G[perm[:20]]
    mostly_others = y.loc[[IDS[i] for i in perm[20:40]]].rename(index={IDS[perm[39]]: "zz"})
    for labels in (y.loc[[IDS[i] for i in perm[1:21]]],    # 19 of X's users, one other
                   y.loc[[IDS[i] for i in perm[20:40]]],   # none of X's users
                   mostly_others):                         # and one id of no user
        with pytest.raises(ValueError, match=r"indexed by ids of users of the graph, \d+ of "
                                             r"which are not users of X's rows.*"
                                             r"y\.loc\[X\.node_ids\]"):
            GCNClassifier(epochs=2).fit(X, labels)
    assert G.ledger.entries() == []
    GCNClassifier(epochs=2).fit(X, y.loc[X.node_ids])   # X's users in X's order: fitted


READERS = {
    "MLPHead.fit": lambda X, y: MLPHead(epochs=2).fit(X, y),
    "LabelRandomizedResponse.fit": lambda X, y: LabelRandomizedResponse(1.0).fit(X, y),
    "randomize": lambda X, y: LabelRandomizedResponse(1.0, classes=[0, 1]).fit().randomize(
        y, X),
    "NodeWise.fit": lambda X, y: NodeWise(SelectKBest(k=1)).fit(X, y),
}


@pytest.mark.parametrize("read", READERS.values(), ids=READERS.keys())
@pytest.mark.parametrize("case", ["integer ids", "ids as text", "one row"])
def test_other_users_labels_are_refused_by_every_step_that_reads_them(read, case):
    # integer ids that cannot be positions (1000..), the same ids written as text, and a
    # single row indexed by another user's id: each was read by position
    rng = np.random.default_rng(3)
    ids = np.arange(1000, 1000 + N) if case != "one row" else np.array(IDS)
    G = GraphData(rng.normal(size=(N, 3)), node_ids=ids)
    y = pd.Series(np.arange(N) % 2, index=ids)
    X, other = (G[:20], y.iloc[20:]) if case != "one row" else (G[[0]], y.iloc[[7]])
    if case == "ids as text":
        other = other.set_axis(other.index.astype(str))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="not all of them users of X's rows|"
                                             "not users of X's rows"):
            read(X, other)
    assert G.ledger.entries() == []


def test_an_index_repeating_some_of_xs_users_says_so():
    G, y, perm = _graph()
    X = G[:20]
    repeated = y.loc[[IDS[0]] * 2 + IDS[2:20]]   # u0 twice, u1 missing
    with pytest.raises(ValueError, match="some of X's users repeated and others missing"):
        MLPHead(epochs=2).fit(X, repeated)


def test_an_index_that_names_users_only_by_coincidence_is_positional():
    # words, one of which happens to be a user's id; positions stored as floats
    G, y, perm = _graph()
    X = G[:20]
    words = pd.Series(np.arange(20) % 2, index=["u0"] + [f"w{i}" for i in range(19)])
    GCNClassifier(epochs=2).fit(X, words)
    H = GraphData(np.random.default_rng(4).normal(size=(N, 3)))   # default ids 0..n-1
    MLPHead(epochs=2).fit(H[:20], pd.Series(np.arange(20) % 2,
                                            index=np.arange(20, dtype=float)))


def test_positional_series_are_read_by_position():
    G, y, perm = _graph()
    X = G[perm]
    clf = GCNClassifier(epochs=2, random_state=0)
    ref = clf.fit(X, y.to_numpy()[perm]).predict(G)
    # a new Series (RangeIndex) and an index that names no user of the graph: positions
    for labels in (pd.Series(y.to_numpy()[perm]),
                   pd.Series(y.to_numpy()[perm], index=np.arange(N) + 7)):
        np.testing.assert_array_equal(clf.fit(X, labels).predict(G), ref)


def test_default_ids_and_the_label_randomizer():
    # default ids 0..n-1: a Series indexed by the nodes, sliced with the view, is aligned;
    # the whole Series with a permuted view is not
    rng = np.random.default_rng(1)
    G = GraphData(rng.normal(size=(N, 3)))
    y = pd.Series(np.arange(N) % 3)
    perm = rng.permutation(N)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1, 2], random_state=0).fit()
    with pytest.raises(ValueError, match="Series indexed by the users"):
        rr.randomize(y.iloc[perm[::-1]], G[perm])
    assert G.ledger.entries() == []
    assert len(rr.randomize(y.iloc[perm], G[perm])) == N


def test_positions_kept_by_scikit_learn_splitters_are_positional():
    # Before: each fold's y.iloc[train] kept positions as its index; where positions were
    # also integer ids of the graph they were read as ids and refused (nan scores).
    from sklearn.model_selection import cross_val_score, train_test_split
    rng = np.random.default_rng(2)
    A = sp.random(N, N, density=0.15, random_state=1, format="csr")
    A = ((A + A.T) > 0).astype(float)
    y_np = np.arange(N) % 2
    for ids in (None, np.arange(1, N + 1)):      # default ids, and ids 1..n
        G = GraphData(rng.normal(size=(N, 3)), A, node_ids=ids)
        train = rng.permutation(N)[:30]
        for y in (pd.Series(y_np[train]), pd.Series(y_np[train]).reset_index(drop=True)):
            scores = cross_val_score(GCNClassifier(epochs=2), G[train], y, cv=3,
                                     error_score="raise")
            assert np.all(np.isfinite(scores))
        y_all = pd.Series(y_np)                  # positions as the index
        assert np.all(np.isfinite(cross_val_score(GCNClassifier(epochs=2), G, y_all, cv=3,
                                                  error_score="raise")))
        Xtr, Xte, ytr, yte = train_test_split(G, y_all, random_state=0)
        clf = GCNClassifier(epochs=2).fit(Xtr, ytr)
        assert clf.score(Xte, yte) == clf.score(Xte, yte.to_numpy())


def test_a_one_column_frame_is_checked_too():
    G, y, perm = _graph()
    rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit()
    with pytest.raises(ValueError, match="Series indexed by the users"):
        rr.randomize(y.to_frame(), G[perm])
    assert G.ledger.entries() == []
