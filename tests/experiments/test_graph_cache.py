"""GraphCache / CachedPipeline: whole-graph steps computed once across processes."""

import os
import uuid
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.experiments import CachedPipeline, GraphCache, graph_content_key
from skldp.mechanisms import HDSMechanism
from skldp.propagation import PPRPropagation


def _count(counter, what):
    # one file per call: a count that survives worker processes
    Path(counter, f"{what}-{os.getpid()}-{uuid.uuid4().hex}").touch()


def _calls(counter, what):
    return len(list(Path(counter).glob(f"{what}-*")))


class CountingHDS(HDSMechanism):
    def __init__(self, eps=1.0, *, k=None, feature_range=None, random_state=None,
                 counter=None):
        super().__init__(eps, k=k, feature_range=feature_range, random_state=random_state)
        self.counter = counter

    def _transform_graph(self, G):
        _count(self.counter, "hds")
        return super()._transform_graph(G)


class CountingPPR(PPRPropagation):
    def __init__(self, alpha=0.1, counter=None):
        super().__init__(alpha=alpha)
        self.counter = counter

    def _transform_graph(self, G):
        _count(self.counter, "ppr")
        return super()._transform_graph(G)


@pytest.fixture
def graph(binary_sbm):
    return binary_sbm(n=240, d=12, p_in=0.08, p_out=0.005)


def _pipe(counter, cls=Pipeline, eps=2.0, **kw):
    return cls([("hds", CountingHDS(eps=eps, k=4, feature_range=(0, 1), random_state=0,
                                    counter=counter)),
                ("ppr", CountingPPR(alpha=0.2, counter=counter)),
                ("clf", LogisticRegression(max_iter=300))], **kw)


@pytest.mark.long
def test_grid_search_n_jobs_2_perturbs_and_propagates_once(graph, tmp_path):
    G, y = graph
    # One counter folder for both searches: it is a parameter, so part of the collection.
    counter = tmp_path / "calls"
    counter.mkdir()
    grid = {"clf__C": [0.1, 1.0, 10.0]}
    ref = GridSearchCV(_pipe(str(counter)), grid, cv=3, n_jobs=2).fit(G, y)
    # Without a disk cache the workers perturb again (the memo lives on the graph in one
    # process and is not pickled): the repetition the cache removes.
    assert _calls(counter, "hds") > 1
    for p in counter.iterdir():
        p.unlink()
    search = GridSearchCV(_pipe(str(counter), CachedPipeline,
                                graph_cache=str(tmp_path / "cache")),
                          grid, cv=3, n_jobs=2).fit(G, y)
    assert _calls(counter, "hds") == 1
    assert _calls(counter, "ppr") == 1
    # ... and the results are those of the uncached search
    np.testing.assert_array_equal(search.cv_results_["mean_test_score"],
                                  ref.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(search.predict(G), ref.predict(G))
    assert len(GraphCache(tmp_path / "cache").entries()) == 2


def test_hit_returns_identical_output_and_names(graph, tmp_path):
    G, y = graph
    counter = tmp_path / "c"
    counter.mkdir()
    pipe = Pipeline(_pipe(str(counter)).steps[:2])
    with GraphCache(tmp_path / "cache") as cache:
        Z1 = pipe.fit_transform(G)
    assert (cache.misses, cache.hits) == (2, 0)
    G2 = GraphData(G.features.copy(), G.adjacency.copy())  # same content, new store
    assert graph_content_key(G2) == graph_content_key(G)
    with GraphCache(tmp_path / "cache") as cache2:
        Z2 = Pipeline(_pipe(str(counter)).steps[:2]).fit_transform(G2)
    assert (cache2.misses, cache2.hits) == (0, 2)
    assert _calls(counter, "hds") == 1 and _calls(counter, "ppr") == 1
    np.testing.assert_array_equal(np.asarray(Z1), np.asarray(Z2))
    assert Z1.feature_names is None or list(Z1.feature_names) == list(Z2.feature_names)


def test_other_seed_or_graph_is_another_entry(graph, tmp_path):
    G, y = graph
    counter = tmp_path / "c"
    counter.mkdir()
    with GraphCache(tmp_path / "cache"):
        _pipe(str(counter)).steps[0][1].fit_transform(G)
        step = CountingHDS(eps=2.0, k=4, feature_range=(0, 1), random_state=1,
                           counter=str(counter))
        step.fit_transform(G)
        X = G.features.copy()
        X[0, 0] = 1 - X[0, 0]
        CountingHDS(eps=2.0, k=4, feature_range=(0, 1), random_state=0,
                    counter=str(counter)).fit_transform(GraphData(X, G.adjacency))
    assert _calls(counter, "hds") == 3


def test_raw_outputs_are_never_written(graph, tmp_path):
    G, y = graph
    counter = tmp_path / "c"
    counter.mkdir()
    raw = Pipeline([("ppr", CountingPPR(counter=str(counter)))])
    clear = Pipeline([("hds", CountingHDS(eps=np.inf, feature_range=(0, 1), random_state=0,
                                          counter=str(counter))),
                      ("ppr", CountingPPR(counter=str(counter)))])
    with GraphCache(tmp_path / "cache") as cache:
        raw.fit_transform(G)
        clear.fit_transform(G)
    assert cache.entries() == [] and cache.skipped == 3
    with GraphCache(tmp_path / "cache", allow_raw=True) as cache:
        raw.fit_transform(GraphData(G.features, G.adjacency))
    assert len(cache.entries()) == 1


def test_damaged_entry_is_recomputed(graph, tmp_path):
    G, _ = graph
    counter = tmp_path / "c"
    counter.mkdir()
    step = CountingHDS(eps=1.0, k=3, feature_range=(0, 1), random_state=0,
                       counter=str(counter))
    with GraphCache(tmp_path / "cache") as cache:
        Z = step.fit_transform(G)
    (entry,) = cache.entries()
    entry.write_bytes(b"not a joblib file")
    with GraphCache(tmp_path / "cache") as cache:
        Z2 = step.fit_transform(GraphData(G.features, G.adjacency))
    assert _calls(counter, "hds") == 2
    np.testing.assert_array_equal(np.asarray(Z), np.asarray(Z2))


def test_bad_location():
    with pytest.raises(ValueError, match="directory"):
        GraphCache("")
