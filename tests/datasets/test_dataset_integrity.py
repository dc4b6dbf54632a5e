"""Dataset files checked wherever they come from, the raw formats' edge cases, Python 2
pickles, and the Planetoid public split as the loaders give it."""

import io
import pickle
import pickletools

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.datasets import _loaders, load_dataset
from skldp.datasets._sources import (
    _binary_features,
    _edge_list,
    canonical,
    content_digest,
    graph_arrays,
    safe_pickle_load,
)


@pytest.fixture
def german():
    """The bytes of German credit's reference file (bundled)."""
    return _loaders._locate("german", None, None, download_if_missing=False).read_bytes()


@pytest.fixture
def no_bundle(monkeypatch, tmp_path, german):
    """Load as if nothing were bundled, with only the cache folder tmp_path/cache."""
    monkeypatch.setattr(_loaders, "BUNDLED", frozenset())
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    monkeypatch.setenv("SKLDP_DATA_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_damaged_file_in_the_cache_is_an_error(no_bundle, german):
    data = bytearray(german)
    data[len(data) // 2] ^= 0xFF
    no_bundle.mkdir()
    (no_bundle / "german.npz").write_bytes(bytes(data))
    with pytest.raises(OSError, match="Checksum mismatch for dataset 'german'"):
        load_dataset("german", download_if_missing=False)


def test_a_far_too_large_file_is_refused_before_it_is_read(no_bundle, monkeypatch, german):
    no_bundle.mkdir()
    (no_bundle / "german.npz").write_bytes(b"\0" * (64 * len(german) + 2**20 + 1))
    monkeypatch.setattr(_loaders.Path, "read_bytes",
                        lambda self: pytest.fail("the whole file was read"))
    with pytest.raises(OSError, match="Checksum mismatch.*bytes"):
        load_dataset("german", download_if_missing=False)


def test_a_file_saved_again_with_the_same_arrays_is_accepted(no_bundle, german):
    # another zip container (uncompressed, other order): the sha256 of the file differs,
    # the content digest of its arrays does not
    with np.load(io.BytesIO(german)) as z:
        arrays = {k: z[k] for k in reversed(z.files)}
    no_bundle.mkdir()
    np.savez(no_bundle / "german.npz", **arrays)
    assert _loaders._sha256(no_bundle / "german.npz") != _loaders.DATASETS["german"][0]
    b = load_dataset("german", download_if_missing=False)
    assert b.data.shape == (1000, 27) and b.filename == str(no_bundle / "german.npz")
    arrays["y"] = 1 - arrays["y"]                      # the same container, other labels
    np.savez(no_bundle / "german.npz", **arrays)
    with pytest.raises(OSError, match="Checksum mismatch"):
        load_dataset("german", download_if_missing=False)


def test_what_is_loaded_is_what_was_verified(no_bundle, tmp_path, monkeypatch, german):
    # the content digest covers the canonical arrays: one-sided edges, self loops and
    # float64 features passed it, and the raw arrays (another graph) were loaded
    no_bundle.mkdir()
    (no_bundle / "german.npz").write_bytes(german)
    ref = load_dataset("german", download_if_missing=False)
    with np.load(io.BytesIO(german)) as z:
        arrays = {k: z[k] for k in z.files}
    n = int(arrays["adj_shape"][0])
    A = sp.csr_matrix((np.ones(len(arrays["adj_indices"])), arrays["adj_indices"],
                       arrays["adj_indptr"]), shape=(n, n))
    B = sp.csr_matrix(sp.triu(A, 1) + sp.eye(n))  # one direction of each edge, self loops
    arrays.update(adj_indices=B.indices.astype(np.int32), adj_indptr=B.indptr,
                  X_data=arrays["X_data"].astype(np.float64) + 1e-9)
    folder = tmp_path / "folder"
    folder.mkdir()
    for where in (no_bundle, folder):  # the cache, then SKLDP_DATASETS_DIR
        if where is folder:
            monkeypatch.setenv("SKLDP_DATASETS_DIR", str(folder))
        np.savez(where / "german.npz", **arrays)
        b = load_dataset("german", download_if_missing=False)
        assert b.filename == str(where / "german.npz")
        assert (b.data.adjacency != ref.data.adjacency).nnz == 0
        assert b.data.features.dtype == np.float32
        assert np.array_equal(b.data.features, ref.data.features)


def test_the_data_home_argument_wins_over_the_environment(no_bundle, tmp_path, german):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "german.npz").write_bytes(german)
    b = load_dataset("german", data_home=mine, download_if_missing=False)
    assert b.filename == str(mine / "german.npz")
    assert _loaders.get_data_home(mine) == mine
    assert _loaders.get_data_home() == no_bundle


def test_the_planetoid_public_split():
    # Yang et al. (2016): train = the first 20 labelled nodes of each class, val = the
    # next 500 nodes, test = the 1,000 ids of test.index (the last ids of the graph)
    for name, n_train in (("cora", 140), ("citeseer", 120)):
        b = load_dataset(name)
        n = b.data.n_nodes
        assert np.array_equal(np.flatnonzero(b.train_mask), np.arange(n_train))
        assert np.array_equal(np.flatnonzero(b.val_mask), np.arange(n_train, n_train + 500))
        test = np.flatnonzero(b.test_mask)
        assert len(test) == 1000 and test.max() == n - 1
        assert np.bincount(b.target[b.train_mask]).tolist() == [20] * (n_train // 20)
        assert (b.target[b.test_mask] >= 0).all()
    # CiteSeer's test range has 15 ids missing from test.index: they are unlabelled
    ids = np.arange(test.min(), n)
    assert np.array_equal(np.flatnonzero(b.target < 0), np.setdiff1d(ids, test))
    assert len(ids) == 1015


def test_explicit_zero_features_do_not_change_the_content():
    # (graph_arrays may reuse the index arrays of the matrix it is given: a new one each)
    X = sp.csr_matrix((np.array([1.0, 0.0, 1.0]), np.array([0, 1, 1]), np.array([0, 2, 3])),
                      shape=(2, 2))
    a = graph_arrays(2, [0], [1], X, [0, 1])
    b = graph_arrays(2, [0], [1], sp.csr_matrix(np.eye(2)), [0, 1])
    assert a["X_data"].tolist() == [1.0, 1.0]
    assert content_digest(a) == content_digest(b) == content_digest(canonical(a))


def test_edge_files_need_integer_ids(tmp_path):
    p = tmp_path / "edges.csv"
    p.write_text("a,b\n0,1\n2,3\n")
    rows, cols = _edge_list(p)
    assert rows.tolist() == [0, 2] and cols.tolist() == [1, 3]
    p.write_text("0 1\n2 3\n")                         # no header: the first edge is kept
    assert _edge_list(p)[0].tolist() == [0, 2]
    p.write_text("a,b\n0,1.5\n2,3\n")
    with pytest.raises(ValueError, match="two integer node ids"):
        _edge_list(p)


def test_musae_features_are_binary_over_known_nodes(tmp_path):
    p = tmp_path / "features.json"
    p.write_text('{"0": [1, 1, 2], "2": [0]}')
    X = _binary_features(p, 3, 3)
    assert X.toarray().tolist() == [[0, 1, 1], [0, 0, 0], [1, 0, 0]]
    p.write_text('{"0": [1], "3": [0]}')
    with pytest.raises(ValueError, match="features for unknown node '3'"):
        _binary_features(p, 3, 3)


def _python2_pickle(obj):
    """``obj`` pickled as Python 2 does (protocol 2, byte strings as ``str``): the format
    of Planetoid's raw files."""
    data = bytearray(pickle.dumps(obj, protocol=3))
    for op, _, pos in pickletools.genops(bytes(data)):
        if op.name == "SHORT_BINBYTES":
            data[pos:pos + 1] = b"U"                     # SHORT_BINSTRING, same layout
    data[1] = 2
    return bytes(data).replace(b"numpy._core.multiarray", b"numpy.core.multiarray")


def test_python2_pickles_of_arrays_are_read(tmp_path):
    a = np.array([200, 1, 300], np.int64)               # bytes above 127: not ASCII
    p = tmp_path / "ind.x.y"
    p.write_bytes(_python2_pickle({"y": a}))
    with pytest.raises(UnicodeDecodeError):
        pickle.load(io.BytesIO(p.read_bytes()))          # what a plain unpickler does
    got = safe_pickle_load(p)
    assert got["y"].dtype == np.int64 and got["y"].tolist() == [200, 1, 300]


def test_a_negative_node_id_is_refused():
    X = sp.csr_matrix(np.eye(3))
    for rows, cols in (([-1], [0]), ([0], [-2])):
        with pytest.raises(ValueError, match=r"outside 0\.\.2"):
            graph_arrays(3, rows, cols, X, [0, 1, 0])


def test_graph_arrays_leaves_its_input_unchanged():
    # a float64 CSR with an explicit zero: graph_arrays casts it to float32 (new data,
    # shared indices/indptr), then eliminate_zeros() compacts the shared arrays in place
    X = sp.csr_matrix((np.array([1.0, 0.0, 1.0]), np.array([0, 1, 1]), np.array([0, 2, 3])),
                      shape=(2, 2))
    before = X.toarray().copy()
    graph_arrays(2, [0], [1], X, [0, 1])
    np.testing.assert_array_equal(X.toarray(), before)   # fails: [[1, 0], [0, 0]]
