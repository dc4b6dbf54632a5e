"""Download from the original sources: raw formats, conversion, content checksum, safety.

No internet here: each test writes the raw files of a dataset in its source's
format (Planetoid pickles, MUSAE / FEATHER csv + json, NIFTY csv, an igraph
pickle) from the reference ``.npz``, serves them on 127.0.0.1 in the layout of
raw.githubusercontent.com, and checks that ``load_dataset`` downloads, converts
and verifies them to the reference content.
"""

import csv
import json
import os
import pickle
import sys
import types
from collections import defaultdict

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.datasets import BUNDLED, load_dataset
from skldp.datasets._sources import (
    SOURCES,
    build_from_source,
    canonical,
    content_digest,
    graph_arrays,
    safe_pickle_load,
)


def _reference(name):
    """The arrays of ``name``'s converted file (the test asked ``dataset_file`` first)."""
    from skldp.datasets import _loaders
    with np.load(_loaders._locate(name, None, None, download_if_missing=False)) as z:
        a = {k: z[k] for k in z.files}
    n = int(a["adj_shape"][0])
    A = sp.csr_matrix((np.ones(len(a["adj_indices"])), a["adj_indices"], a["adj_indptr"]),
                      shape=(n, n))
    X = sp.csr_matrix((a["X_data"], a["X_indices"], a["X_indptr"]), shape=tuple(a["X_shape"]))
    return a, A, X


def _upper_edges(A, rng, self_loops=3):
    """Each undirected edge once (random direction), plus a few self loops and a duplicate."""
    coo = sp.triu(A, 1).tocoo()
    E = np.column_stack([coo.row, coo.col])
    flip = rng.random(len(E)) < 0.5
    E[flip] = E[flip][:, ::-1]
    loops = np.repeat(rng.choice(A.shape[0], self_loops, replace=False)[:, None], 2, axis=1)
    return np.vstack([E, loops, E[:1]])


def _write_csv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _onehot(y, k):
    Y = np.zeros((len(y), k), np.int32)
    Y[y >= 0, y[y >= 0]] = 1
    return Y


def _write_planetoid(name, paths, rng):
    a, A, X = _reference(name)
    y, test = a["y"], np.flatnonzero(a["test_mask"])
    n_train, k = int(a["train_mask"].sum()), int(y.max()) + 1
    test = rng.permutation(test)  # test.index lists the ids in no particular order
    n_all = int(test.min())
    graph = defaultdict(list)
    for i, j in _upper_edges(A, rng):
        graph[int(i)].append(int(j))
    for i in range(A.shape[0]):
        graph[i]  # every node is a key, as in the raw files
    objs = {"y": _onehot(y[:n_train], k), "ally": _onehot(y[:n_all], k),
            "ty": _onehot(y[test], k), "graph": graph}
    if X.shape[1]:
        objs.update(x=X[:n_train], allx=X[:n_all], tx=X[test])
    for key, obj in objs.items():
        with open(paths[key], "wb") as f:
            pickle.dump(obj, f, protocol=2)
    paths["test.index"].write_text("".join(f"{i}\n" for i in test))


def _write_musae(name, paths, rng):
    a, A, X = _reference(name)
    n, kind = A.shape[0], SOURCES[name].options["kind"]
    ids = np.arange(n)
    E = _upper_edges(A, rng)
    feats = {str(i): X.indices[X.indptr[i]:X.indptr[i + 1]].tolist() for i in range(n)}
    if kind == "twitch":  # rows in another order than new_id; the graph uses new_id
        perm = rng.permutation(n)
        rows = [[int(p) + 100, 5, ["False", "True"][a["y"][p]], 7, "False", int(p)]
                for p in perm]
        _write_csv(paths["target"], ["id", "days", "mature", "views", "partner", "new_id"],
                   rows)
        _write_csv(paths["edges"], ["from", "to"], E)
    elif kind == "facebook":
        classes = a["class_names"]
        rows = [[i, 1000 + i, f"page {i}", classes[a["y"][i]]] for i in ids]
        _write_csv(paths["target"], ["id", "facebook_id", "page_name", "page_type"], rows)
        _write_csv(paths["edges"], ["id_1", "id_2"], E)
    else:
        rows = [[i, repr(float(t))] for i, t in enumerate(a["traffic"])]
        _write_csv(paths["target"], ["id", "target"], rows)
        _write_csv(paths["edges"], ["id1", "id2"], E)
    paths["features"].write_text(json.dumps(feats))


def _write_lastfm(name, paths, rng):
    a, A, _ = _reference(name)
    perm = rng.permutation(A.shape[0])
    _write_csv(paths["target"], ["id", "target"], [[i, a["y"][i]] for i in perm])
    _write_csv(paths["edges"], ["node_1", "node_2"], _upper_edges(A, rng))


def _write_german(name, paths, rng):
    a, A, X = _reference(name)
    names, X = list(a["feature_names"]), X.toarray()
    header = names[:5] + ["PurposeOfLoan"] + names[5:18] + ["OtherLoansAtStore"] + names[18:]
    header.insert(10, "GoodCustomer")
    rows = []
    for i in range(X.shape[0]):
        vals = dict(zip(names, X[i], strict=True))
        vals.update(Gender=["Male", "Female"][a["sens"][i]], PurposeOfLoan="Radio/TV",
                    OtherLoansAtStore=0, GoodCustomer=[-1, 1][a["y"][i]])
        rows.append([f"{v:g}" if isinstance(v, np.floating) else v
                     for v in (vals[h] for h in header)])
    _write_csv(paths["csv"], header, rows)
    E = _upper_edges(A, rng)
    paths["edges"].write_text("".join(f"{float(i)} {float(j)}\n" for i, j in E))


def _fake_igraph_graph():
    """A class that pickles exactly like ``igraph.Graph`` (its ``__reduce__``), without igraph."""

    class Graph:
        def __init__(self, *args):
            self.args = args

        def __reduce__(self):
            return (Graph, self.args, {})

    Graph.__module__, Graph.__qualname__ = "igraph", "Graph"
    return Graph


def _write_rgnn(name, paths, rng, monkeypatch):
    a, A, X = _reference(name)
    n = A.shape[0]
    vattrs = {"name": [str(i) for i in range(n)]}
    for j, col in enumerate(a["feature_names"]):
        vattrs[str(col)] = X[:, j].toarray().ravel().tolist()
    vattrs["class"] = a["y"].tolist()
    coo = sp.triu(A, 1).tocoo()
    edges = [(int(i), int(j)) for i, j in zip(coo.row, coo.col, strict=True)]
    edges += [(j, i) for i, j in edges[:50]]  # German: edges stored twice
    fake = types.ModuleType("igraph")
    fake.Graph = _fake_igraph_graph()
    monkeypatch.setitem(sys.modules, "igraph", fake)
    with open(paths["graph"], "wb") as f:
        pickle.dump(fake.Graph(n, edges, False, {}, vattrs, {}), f, protocol=2)


WRITERS = {"cora": _write_planetoid, "citeseer": _write_planetoid,
           "pubmed_nofeatures": _write_planetoid, "facebook": _write_musae,
           "twitch_ENGB": _write_musae, "wiki_chameleon": _write_musae,
           "lastfm_asia_nofeatures": _write_lastfm, "german": _write_german,
           "german_rgnn": _write_rgnn, "student_rgnn": _write_rgnn}


def _serve_raw(name, root, monkeypatch, seed=0):
    """Write ``name``'s raw files under ``root/<owner>/<repo>/<commit>/<path>``."""
    src = SOURCES[name]
    paths = {role: root / src.repo / src.commit / rel for role, rel in src.files.items()}
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    if WRITERS[name] is _write_rgnn:
        _write_rgnn(name, paths, rng, monkeypatch)
    else:
        WRITERS[name](name, paths, rng)
    return paths


def test_every_dataset_has_a_source():
    assert set(SOURCES) == set(WRITERS)
    for src in SOURCES.values():
        assert len(src.commit) == 40 and src.url(next(iter(src.files))).startswith(
            f"https://raw.githubusercontent.com/{src.repo}/{src.commit}/")


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_download_from_original_source(name, server, tmp_path, monkeypatch, dataset_file):
    dataset_file(name)  # skips a dataset that is neither bundled nor available offline
    root, url = server
    _serve_raw(name, root, monkeypatch)
    ref, A, X = _reference(name)
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    cache = tmp_path / "cache"
    if name in BUNDLED:  # force the download path
        from skldp.datasets import _loaders
        monkeypatch.setattr(_loaders, "BUNDLED", frozenset())
    b = load_dataset(name, data_home=cache, source_url=url)
    assert b.filename == str(cache / f"{name}.npz")
    assert (b.data.adjacency != A).nnz == 0
    assert abs(sp.csr_matrix(b.data.features) - X).max() == 0 if X.shape[1] else True
    np.testing.assert_array_equal(b.target, ref["y"])
    with np.load(cache / f"{name}.npz") as z:
        assert content_digest(canonical({k: z[k] for k in z.files})) == SOURCES[name].digest
    # the converted cache is reused: the source is no longer needed
    assert load_dataset(name, data_home=cache, source_url="http://127.0.0.1:9").data.shape == \
        b.data.shape


def _synthetic_reference(name, n=40, seed=1):
    """Arrays of a small random graph in ``name``'s layout (features, extras)."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.15, random_state=seed, format="csr")
    A = ((A + A.T) > 0).astype(np.float32)
    A.setdiag(0)
    A.eliminate_zeros()
    opts = SOURCES[name].options
    a = {}
    if "kind" in opts:  # MUSAE: binary features over the source's d columns
        X = sp.random(n, opts["d"], density=3 / opts["d"], random_state=seed, format="csr")
        X.data[:] = 1
        if opts["kind"] == "facebook":
            a["class_names"] = np.array(["company", "government", "politician", "tvshow"])
            a["y"] = rng.integers(0, 4, n)
        elif opts["kind"] == "twitch":
            a["y"] = rng.integers(0, 2, n)
        else:
            a["traffic"] = rng.lognormal(8, 1, n)
            a["y"] = np.digitize(a["traffic"], np.quantile(a["traffic"], [0.2, 0.4, 0.6, 0.8]))
    else:  # RGNN: numeric vertex attributes, one of them the sensitive one
        names = ["age", opts["sens"], "score"]
        X = sp.csr_matrix(np.column_stack([rng.integers(15, 23, n), rng.integers(0, 2, n),
                                           rng.integers(0, 20, n)]).astype(np.float64))
        a["feature_names"], a["y"] = np.array(names), rng.integers(0, 2, n)
        a["sens"] = X[:, 1].toarray().ravel().astype(np.int64)
    return a, sp.csr_matrix(A), sp.csr_matrix(X)


@pytest.mark.parametrize("name", sorted(set(WRITERS) - BUNDLED))
def test_converters_of_the_downloaded_formats_offline(name, tmp_path, monkeypatch):
    # The datasets that are not bundled may be absent offline: their converters are
    # checked on a small synthetic graph written in the source's raw format.
    ref, A, X = _synthetic_reference(name)
    monkeypatch.setattr(sys.modules[__name__], "_reference", lambda _: (ref, A, X))
    paths = _serve_raw(name, tmp_path, monkeypatch)
    arrays = SOURCES[name].convert(paths, **SOURCES[name].options)
    n = A.shape[0]
    got_A = sp.csr_matrix((np.ones(len(arrays["adj_indices"])), arrays["adj_indices"],
                           arrays["adj_indptr"]), shape=(n, n))
    got_X = sp.csr_matrix((arrays["X_data"], arrays["X_indices"], arrays["X_indptr"]),
                          shape=tuple(arrays["X_shape"]))
    assert (got_A != A).nnz == 0 and abs(got_X - X).max() == 0
    np.testing.assert_array_equal(arrays["y"], ref["y"])
    for key in ("class_names", "traffic", "feature_names", "sens"):
        if key in ref:
            np.testing.assert_array_equal(arrays[key], ref[key])


def test_tampered_raw_file_is_rejected(server, tmp_path, monkeypatch):
    root, url = server
    paths = _serve_raw("lastfm_asia_nofeatures", root, monkeypatch)
    lines = paths["target"].read_text().splitlines()
    i, t = lines[5].split(",")
    lines[5] = f"{i},{(int(t) + 1) % 18}"  # one user's label changed
    paths["target"].write_text("\n".join(lines) + "\n")
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    from skldp.datasets import _loaders
    monkeypatch.setattr(_loaders, "BUNDLED", frozenset())  # force the download path
    cache = tmp_path / "cache"
    with pytest.raises(OSError, match="Checksum mismatch for dataset 'lastfm_asia_nofeatures'"):
        load_dataset("lastfm_asia_nofeatures", data_home=cache, source_url=url)
    assert list(cache.iterdir()) == []  # neither the raw files nor a converted npz are kept


def test_wrong_musae_format_is_a_clear_error(server, tmp_path, monkeypatch, dataset_file):
    dataset_file("wiki_chameleon")
    root, url = server
    paths = _serve_raw("wiki_chameleon", root, monkeypatch)
    _write_csv(paths["target"], ["id", "traffic"], [[0, 1.0]])
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    with pytest.raises(OSError, match="dataset 'wiki_chameleon'.*expected a column 'target'"):
        load_dataset("wiki_chameleon", data_home=tmp_path / "c", source_url=url)


def test_wrong_raw_format_is_a_clear_error(server, tmp_path, monkeypatch):
    root, url = server
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    from skldp.datasets import _loaders
    paths = _serve_raw("lastfm_asia_nofeatures", root, monkeypatch)
    german = _serve_raw("german", root, monkeypatch)
    monkeypatch.setattr(_loaders, "BUNDLED", frozenset())  # force the download path
    lines = paths["target"].read_text().splitlines()
    lines[2] = lines[1]  # a user listed twice, another one missing
    paths["target"].write_text("\n".join(lines) + "\n")
    with pytest.raises(OSError, match="node ids are not 0..7623"):
        load_dataset("lastfm_asia_nofeatures", data_home=tmp_path / "c", source_url=url)
    german["edges"].write_text("")
    with pytest.raises(OSError, match="empty edge file"):
        load_dataset("german", data_home=tmp_path / "c", source_url=url)


def test_a_killed_build_s_folder_is_removed_by_a_later_build(tmp_path, monkeypatch):
    from skldp.datasets._loaders import fetch_file
    root, cache = tmp_path / "src", tmp_path / "cache"
    _serve_raw("german", root, monkeypatch)
    dead, running = cache / ".part-german-dead", cache / ".part-german-running"
    for part in (dead, running):
        part.mkdir(parents=True)
        (part / "german.csv").write_text("half a download")
    os.utime(dead, (0, 0))          # killed long ago; the other one is under way
    build_from_source("german", cache, root.as_uri(), fetch=fetch_file)
    assert not dead.exists() and (running / "german.csv").exists()


def test_concurrent_builds_never_break_each_other(tmp_path, monkeypatch):
    # parallel workers on a fresh cache: they shared the raw folder (deleted by any that
    # failed) and the temporary name .part-<name>.npz (moved away by another's replace)
    from skldp.datasets._loaders import fetch_file
    root, cache = tmp_path / "src", tmp_path / "cache"
    _serve_raw("german", root, monkeypatch)
    good, bad = root.as_uri(), (tmp_path / "nowhere").as_uri()

    def fetch_while_another_fails(url, path):
        fetch_file(url, path)
        if path.name == "german.csv":  # another worker's build fails in the meantime
            with pytest.raises(OSError, match="Could not download"):
                build_from_source("german", cache, bad, fetch=fetch_file)

    out = build_from_source("german", cache, good, fetch=fetch_while_another_fails)
    out.unlink()
    replace, others = os.replace, []

    def replace_after_another_build(src, dst):
        if str(dst).endswith("german.npz") and not others:  # another one finishes first
            others.append(None)
            others.append(build_from_source("german", cache, good, fetch=fetch_file))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_after_another_build)
    for p in (cache / "raw" / "german").iterdir():
        p.unlink()  # download again: the other build runs while this one is under way
    assert build_from_source("german", cache, good, fetch=fetch_file) == out == others[1]
    with np.load(out) as z:
        assert content_digest({k: z[k] for k in z.files}) == SOURCES["german"].digest
    assert sorted(p.name for p in cache.iterdir()) == ["german.npz", "raw"]  # no leftovers


def test_unreadable_raw_files_are_a_clear_error(tmp_path, monkeypatch):
    # a truncated pickle or a web page in place of a csv raised a bare EOFError /
    # UnpicklingError / ValueError naming neither the dataset nor the file
    from skldp.datasets._loaders import fetch_file
    root, cache = tmp_path / "src", tmp_path / "cache"
    cora = _serve_raw("cora", root, monkeypatch)
    _serve_raw("german", root, monkeypatch)
    url = root.as_uri()
    graph = cora["graph"].read_bytes()
    cora["graph"].write_bytes(graph[:len(graph) // 2])
    with pytest.raises(OSError, match=r"raw files of dataset 'cora' \(.*ind\.cora\.graph.*"
                                      r"pickle data was truncated.*Load again"):
        build_from_source("cora", cache, url, fetch=fetch_file)
    assert list(cache.iterdir()) == []  # nothing kept
    # a verified build keeps its raw files; damaged later, they are removed too
    build_from_source("german", cache, url, fetch=fetch_file).unlink()
    csv_file = cache / "raw" / "german" / "german.csv"
    csv_file.write_text("<html><body>Please log in</body></html>\n")
    with pytest.raises(OSError, match="raw files of dataset 'german' .*german.csv"):
        build_from_source("german", cache, url, fetch=fetch_file)
    assert not csv_file.exists() and not (cache / "german.npz").exists()
    assert build_from_source("german", cache, url, fetch=fetch_file).exists()  # afresh


class _Evil:
    def __reduce__(self):
        import os
        return (os.system, ("echo pwned",))


def test_pickles_cannot_run_code(tmp_path):
    p = tmp_path / "evil.pkl"
    p.write_bytes(pickle.dumps(_Evil()))
    with pytest.raises(pickle.UnpicklingError, match="Refusing to unpickle"):
        safe_pickle_load(p)
    q = tmp_path / "ok.pkl"
    M = sp.random(5, 4, density=0.5, format="csr", random_state=0)
    q.write_bytes(pickle.dumps({"m": M, "a": np.arange(3), "d": defaultdict(list, {1: [2]})},
                               protocol=2))
    obj = safe_pickle_load(q)
    assert (obj["m"] != M).nnz == 0 and obj["a"].tolist() == [0, 1, 2] and obj["d"][1] == [2]


def test_graph_arrays_canonical_form():
    # duplicates, both directions, self loops and an out-of-range id
    X = sp.csr_matrix(np.eye(3, 2))
    a = graph_arrays(3, [0, 1, 1, 2], [1, 0, 1, 1], X, [0, 1, -1])
    A = sp.csr_matrix((np.ones(len(a["adj_indices"])), a["adj_indices"], a["adj_indptr"]))
    assert A.toarray().tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    assert content_digest(canonical(a)) == content_digest(a)
    b = dict(a, y=np.array([0, 1, 0]))
    assert content_digest(b) != content_digest(a)
    with pytest.raises(ValueError, match="outside 0..2"):
        graph_arrays(3, [0], [3], X, [0, 1, 0])
    with pytest.raises(ValueError, match="do not match"):
        graph_arrays(3, [0], [1], X[:2], [0, 1, 0])
