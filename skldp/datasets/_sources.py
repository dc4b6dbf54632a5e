"""The datasets' original public sources, and converters to the uniform arrays.

Every dataset of :data:`~skldp.datasets.DATASETS` was built from raw files of a
public GitHub repository at a fixed commit (``SOURCES`` below).
:func:`build_from_source` downloads those raw files, converts them with the
same rules (symmetric 0/1 adjacency without self loops, CSR features, labels,
masks and extras), and accepts the result only if its content digest equals the
one of the reference file. The digest covers the arrays, not the ``.npz``
container, so a faithful conversion on any machine matches it.

Pickled raw files (Planetoid, RGNN's igraph graphs) are read with a restricted
unpickler that builds only numpy arrays, scipy sparse matrices, lists, dicts and
a stand-in for ``igraph.Graph``: a downloaded pickle can never run code, and
``igraph`` is not needed.
"""

import codecs
import copyreg
import csv
import hashlib
import json
import os
import pickle
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

GITHUB_RAW = "https://raw.githubusercontent.com"

_PLANETOID = ("kimiyoung/planetoid", "af6abf468a772cc055bec88c52e4d6f51b7c37e3")
_MUSAE = ("benedekrozemberczki/MUSAE", "5f901232957b6c9985d750aac48cda39a4b24285")
_FEATHER = ("benedekrozemberczki/FEATHER", "045db7963fb367eb9aed6439ceea96320e8ac7cc")
_NIFTY = ("chirag126/nifty", "6c270c5ec736c5138d455609112cf6dfcc63dcca")
_RGNN = ("karuna-bhaila/RGNN", "1d70a437a0fdeb055ccb5f5be300af370f28dce5")


@dataclass(frozen=True)
class Source:
    """Where a dataset's raw files live and how they become the uniform arrays.

    ``files`` maps a role (``"edges"``, ``"graph"``, ...) to a path in ``repo``
    at ``commit``; ``convert(paths, **options)`` returns the arrays.
    """

    repo: str
    commit: str
    files: dict
    convert: object
    digest: str
    options: dict = field(default_factory=dict)

    def url(self, role, base=GITHUB_RAW):
        return f"{base.rstrip('/')}/{self.repo}/{self.commit}/{self.files[role]}"


# --------------------------------------------------------------------------- arrays
def graph_arrays(n, rows, cols, X, y, **extras):
    """The uniform arrays: symmetric 0/1 adjacency without self loops, CSR features.

    ``rows``/``cols`` are edge endpoints in any direction, duplicates allowed.
    """
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    if rows.size and (min(rows.min(), cols.min()) < 0 or max(rows.max(), cols.max()) >= n):
        raise ValueError(f"Edge list refers to nodes outside 0..{n - 1}.")
    keep = rows != cols
    r = np.concatenate([rows[keep], cols[keep]])
    c = np.concatenate([cols[keep], rows[keep]])
    A = sp.csr_matrix((np.ones(r.size, np.float32), (r, c)), shape=(n, n))
    A.sum_duplicates()
    A.sort_indices()
    X = sp.csr_matrix(X, dtype=np.float32, copy=True)   # compacted in place below
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    if X.shape[0] != n or len(y) != n:
        raise ValueError(f"Features ({X.shape[0]} rows) or labels ({len(y)}) do not match "
                         f"the {n} nodes.")
    out = {
        "adj_indices": A.indices.astype(np.int32), "adj_indptr": A.indptr.astype(np.int64),
        "adj_shape": np.array([n, n], np.int64),
        "X_data": X.data.astype(np.float32), "X_indices": X.indices.astype(np.int32),
        "X_indptr": X.indptr.astype(np.int64), "X_shape": np.array(X.shape, np.int64),
        "y": np.asarray(y, np.int64),
    }
    for key, value in extras.items():
        value = np.asarray(value)
        if value.dtype.kind in "US":
            value = value.astype(str)
        out[key] = value
    return out


def canonical(arrays):
    """The arrays of a uniform ``.npz`` (any CSR order), rebuilt in canonical form."""
    a = {k: np.asarray(v) for k, v in arrays.items()}
    n = int(a["adj_shape"][0])
    indptr = a["adj_indptr"]
    rows = np.repeat(np.arange(n), np.diff(indptr))
    X = sp.csr_matrix((a["X_data"], a["X_indices"], a["X_indptr"]), shape=tuple(a["X_shape"]))
    core = {"adj_indices", "adj_indptr", "adj_shape", "X_data", "X_indices", "X_indptr",
            "X_shape", "y"}
    extras = {k: v for k, v in a.items() if k not in core}
    return graph_arrays(n, rows, a["adj_indices"], X, a["y"], **extras)


def content_digest(arrays):
    """sha256 over the canonical arrays: key, dtype, shape and values, in key order."""
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.asarray(arrays[key])
        if a.dtype.kind == "U":
            payload, kind = json.dumps(a.tolist()).encode(), "str"
        else:
            a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
            payload, kind = a.tobytes(), a.dtype.str
        h.update(json.dumps([key, kind, list(a.shape)]).encode())
        h.update(payload)
    return h.hexdigest()


# --------------------------------------------------------------------------- safe pickles
class IGraphPickle:
    """Stand-in for ``igraph.Graph`` when unpickling: keeps what ``Graph.__reduce__`` stores.

    ``igraph.Graph`` pickles as ``Graph(n, edges, directed, graph_attrs,
    vertex_attrs, edge_attrs)``.
    """

    def __init__(self, n=0, edges=(), directed=False, graph_attrs=None, vertex_attrs=None,
                 edge_attrs=None):
        self.n, self.edges, self.directed = int(n), list(edges), bool(directed)
        self.graph_attrs = dict(graph_attrs or {})
        self.vertex_attrs = dict(vertex_attrs or {})
        self.edge_attrs = dict(edge_attrs or {})

    def __setstate__(self, state):  # the Graph's __dict__: nothing we need
        pass


def _allowed_globals():
    reconstruct = np.ndarray.__reduce__(np.zeros(1))[0]
    scalar = np.float64(0).__reduce__()[0]
    table = {("igraph", "Graph"): IGraphPickle,
             # protocol-2 pickles written by Python 3 store bytes as codecs.encode(str)
             ("_codecs", "encode"): codecs.encode,
             ("collections", "defaultdict"): defaultdict,
             ("copy_reg", "_reconstructor"): copyreg._reconstructor,
             ("copyreg", "_reconstructor"): copyreg._reconstructor}
    for mod in ("builtins", "__builtin__"):
        for name, obj in (("list", list), ("dict", dict), ("object", object), ("int", int),
                          ("float", float), ("set", set), ("tuple", tuple)):
            table[(mod, name)] = obj
    for mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
        table[(mod, "_reconstruct")] = reconstruct
        table[(mod, "scalar")] = scalar
    table[("numpy", "ndarray")] = np.ndarray
    table[("numpy", "dtype")] = np.dtype
    for fmt in ("csr", "csc", "coo", "lil"):
        cls = getattr(sp, f"{fmt}_matrix")
        for mod in (f"scipy.sparse.{fmt}", f"scipy.sparse._{fmt}", "scipy.sparse"):
            table[(mod, f"{fmt}_matrix")] = cls
    return table


_ALLOWED_GLOBALS = _allowed_globals()


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        try:
            return _ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"Refusing to unpickle {module}.{name}: a downloaded dataset file may only "
                "hold arrays, sparse matrices, lists and dicts.") from None


def safe_pickle_load(path):
    """Unpickle a raw dataset file (Python 2 pickles included) without running code."""
    with open(path, "rb") as f:
        obj = _SafeUnpickler(f, encoding="latin1").load()
    if sp.issparse(obj):  # old scipy pickles may restore a matrix without checks
        obj = sp.csr_matrix(obj)
    return obj


# --------------------------------------------------------------------------- converters
def _labels_from_onehot(Y):
    Y = np.asarray(Y)
    return np.where(Y.sum(1) > 0, Y.argmax(1), -1)


def planetoid(paths, features=True):
    """Planetoid ``ind.<name>.*`` files (Yang et al. 2016): the standard conversion.

    Rows ``0..len(ally)-1`` come from ``allx``/``ally``; row ``test.index[i]``
    from ``tx[i]``/``ty[i]``; ids of the test range missing from ``test.index``
    (CiteSeer) get zero features and label -1. Masks: train = the first
    ``len(y)`` rows, val = the next 500, test = ``test.index``.
    """
    test_index = np.loadtxt(paths["test.index"], dtype=np.int64, ndmin=1)
    ally, ty = np.asarray(safe_pickle_load(paths["ally"])), np.asarray(
        safe_pickle_load(paths["ty"]))
    n_train = len(np.asarray(safe_pickle_load(paths["y"])))
    graph = safe_pickle_load(paths["graph"])
    n_all = ally.shape[0]
    n = max(n_all + len(test_index), int(test_index.max()) + 1, len(graph))
    y = np.full(n, -1, np.int64)
    y[:n_all] = _labels_from_onehot(ally)
    y[test_index] = _labels_from_onehot(ty)
    if features:
        allx = sp.coo_matrix(safe_pickle_load(paths["allx"]))
        tx = sp.coo_matrix(safe_pickle_load(paths["tx"]))
        X = sp.coo_matrix((np.concatenate([allx.data, tx.data]),
                           (np.concatenate([allx.row, test_index[tx.row]]),
                            np.concatenate([allx.col, tx.col]))), shape=(n, allx.shape[1]))
    else:
        X = sp.csr_matrix((n, 0), dtype=np.float32)
    rows = np.concatenate([np.full(len(v), int(k), np.int64) for k, v in graph.items()])
    cols = np.concatenate([np.asarray(list(v), np.int64) for v in graph.values()])
    masks = {name: np.zeros(n, bool) for name in ("train_mask", "val_mask", "test_mask")}
    masks["train_mask"][:n_train] = True
    masks["val_mask"][n_train:n_train + 500] = True
    masks["test_mask"][test_index] = True
    return graph_arrays(n, rows, cols, X, y, **masks)


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], [r for r in rows[1:] if r]
    return header, body


def _column(header, body, name, path):
    if name not in header:
        raise ValueError(f"{Path(path).name}: expected a column {name!r}, found {header}.")
    j = header.index(name)
    return [r[j] for r in body]


def _edge_list(path):
    """First two integer columns of an edge file (csv with header, or whitespace text)."""
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    if not first.strip():
        raise ValueError(f"{Path(path).name}: empty edge file.")
    delimiter = "," if "," in first else None
    skip = 0 if first.replace(",", " ").split()[0].replace(".", "").lstrip("-").isdigit() else 1
    E = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2, dtype=np.float64)
    if E.shape[1] < 2 or not np.all(E[:, :2] == np.round(E[:, :2])):
        raise ValueError(f"{Path(path).name}: expected two integer node ids per row.")
    return E[:, 0].astype(np.int64), E[:, 1].astype(np.int64)


def _check_ids(ids, path):
    """Node ids of a target file must be exactly 0..n-1 (in any order)."""
    if not np.array_equal(np.sort(ids), np.arange(len(ids))):
        raise ValueError(f"{Path(path).name}: node ids are not 0..{len(ids) - 1}.")


def _binary_features(path, n, d):
    """MUSAE features json ``{node: [active feature ids]}`` as a binary CSR (n x d)."""
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    rows, cols = [], []
    for key, active in raw.items():
        if not key.isdigit() or int(key) >= n:
            raise ValueError(f"{Path(path).name}: features for unknown node {key!r}.")
        rows.append(np.full(len(active), int(key), np.int64))
        cols.append(np.asarray(active, np.int64))
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    if cols.size and (cols.min() < 0 or cols.max() >= d):
        raise ValueError(f"{Path(path).name}: feature ids outside 0..{d - 1}.")
    X = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=(n, d))
    X.data[:] = 1  # duplicate ids stay one active feature
    return X


def musae(paths, kind, d):
    """MUSAE (Rozemberczki et al. 2021) edges csv, features json and target csv.

    ``kind``: ``"facebook"`` (label ``page_type``, classes in alphabetical
    order), ``"twitch"`` (node id ``new_id``, label ``mature``) or
    ``"wikipedia"`` (``target`` = monthly traffic kept as ``traffic``; label =
    its 5 equal-frequency bins, ``np.digitize`` at the 20/40/60/80 % quantiles).
    """
    header, body = _read_csv(paths["target"])
    id_col = "new_id" if kind == "twitch" else "id"
    ids = np.asarray(_column(header, body, id_col, paths["target"]), np.int64)
    n = len(ids)
    _check_ids(ids, paths["target"])
    extras = {}
    if kind == "facebook":
        labels = np.asarray(_column(header, body, "page_type", paths["target"]))
        classes, y = np.unique(labels, return_inverse=True)
        extras["class_names"] = classes
    elif kind == "twitch":
        mature = _column(header, body, "mature", paths["target"])
        y = np.array([{"true": 1, "false": 0, "1": 1, "0": 0}[v.strip().lower()]
                      for v in mature])
        extras["class_names"] = np.array(["not_mature", "mature"])
    else:
        traffic = np.asarray(_column(header, body, "target", paths["target"]), np.float64)
        y = np.digitize(traffic, np.quantile(traffic, [0.2, 0.4, 0.6, 0.8]))
        extras["traffic"] = traffic
    order = np.argsort(ids)
    y = np.asarray(y)[order]
    extras = {k: (v[order] if k == "traffic" else v) for k, v in extras.items()}
    X = _binary_features(paths["features"], n, d)
    rows, cols = _edge_list(paths["edges"])
    return graph_arrays(n, rows, cols, X, y, **extras)


def feather_lastfm(paths, n_top=10):
    """FEATHER LastFM Asia edges and country targets; no features (not obtainable)."""
    header, body = _read_csv(paths["target"])
    ids = np.asarray(_column(header, body, "id", paths["target"]), np.int64)
    target = np.asarray(_column(header, body, "target", paths["target"]), np.int64)
    n = len(ids)
    _check_ids(ids, paths["target"])
    y = np.empty(n, np.int64)
    y[ids] = target
    counts = Counter(y.tolist())
    top = sorted(counts, key=lambda c: (-counts[c], c))[:n_top]
    rows, cols = _edge_list(paths["edges"])
    return graph_arrays(n, rows, cols, sp.csr_matrix((n, 0), dtype=np.float32), y,
                        top10_mask=np.isin(y, top))


def nifty_german(paths):
    """NIFTY German credit (Agarwal et al. 2021): csv + edge list, NIFTY's 27 features.

    Drops ``GoodCustomer`` (the label: 1 -> 1, -1 -> 0), ``OtherLoansAtStore``
    and ``PurposeOfLoan``; Gender is coded Female = 1 and kept as ``sens``.
    """
    header, body = _read_csv(paths["csv"])
    drop = {"GoodCustomer", "OtherLoansAtStore", "PurposeOfLoan"}
    names = [h for h in header if h not in drop]
    gender = np.array([v == "Female" for v in _column(header, body, "Gender", paths["csv"])],
                      np.int64)
    cols = {h: (gender if h == "Gender" else np.asarray(_column(header, body, h, paths["csv"]),
                                                         np.float64)) for h in names}
    X = np.column_stack([cols[h] for h in names]).astype(np.float32)
    good = np.asarray(_column(header, body, "GoodCustomer", paths["csv"]), np.int64)
    y = (good == 1).astype(np.int64)
    rows, c = _edge_list(paths["edges"])
    return graph_arrays(len(body), rows, c, X, y, sens=gender, feature_names=np.array(names))


def rgnn_igraph(paths, sens):
    """RGNN's semi-synthetic graphs (Bhaila et al. 2024): a pickled ``igraph.Graph``.

    Features = every vertex attribute except ``name`` and ``class`` (pickle order),
    ``y`` = ``class``, ``sens`` = the named attribute.
    """
    g = safe_pickle_load(paths["graph"])
    if not isinstance(g, IGraphPickle):
        raise ValueError(f"{Path(paths['graph']).name}: expected a pickled igraph Graph.")
    names = [k for k in g.vertex_attrs if k not in ("name", "class")]
    X = np.column_stack([np.asarray(g.vertex_attrs[k], np.float64) for k in names])
    E = np.asarray(g.edges, np.int64).reshape(-1, 2)
    return graph_arrays(g.n, E[:, 0], E[:, 1], X.astype(np.float32),
                        np.asarray(g.vertex_attrs["class"], np.int64),
                        sens=np.asarray(g.vertex_attrs[sens], np.int64),
                        feature_names=np.array(names))


def _planetoid_files(name, features=True):
    keys = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
    if not features:
        keys = ("y", "ty", "ally", "graph", "test.index")
    return {k: f"data/ind.{name}.{k}" for k in keys}


def _musae_files(stem):
    return {"edges": f"input/edges/{stem}_edges.csv", "features": f"input/features/{stem}.json",
            "target": f"input/target/{stem}_target.csv"}


def _rgnn_files(stem):
    return {"graph": f"RGNN/datasets/{stem}/{stem}/raw/{stem}_synthetic_graph.pkl"}


# content_digest(canonical(np.load(<reference .npz file>))) of each reference file.
DIGESTS = {
    "cora": "74fe22525fe26e0bbcce3782bce791849d8d9c9a7654b8bdcd6ff8a0b81f5d0f",
    "citeseer": "0d348de9043a19583a3b68ae3001cbf7cd7d84110287f5e06bed53120e9ad821",
    "pubmed_nofeatures": "f820623045011b798193cb76417e388136efa15519b39a0bc1885f8f5f3f602c",
    "facebook": "241c04845376b8edcbdc5e894c4a43e726f0444fd5b29b8c2c75fb8f11b6d782",
    "twitch_ENGB": "97914feae55e846fac9e589d0bd165e43d1c38f5e724941ecbce27f5a3597fd9",
    "wiki_chameleon": "0a4b89b5313b90d6d6fb65c487c252e3926859e49ce53d89d5c47425d257e5db",
    "lastfm_asia_nofeatures": "b199aa18e68ff0b25e5d1ae9dba94fe950d02e6f0026ee82de67e14b5c21a726",
    "german": "88c0dbc83bda62ff3f13ea95ec80ad0a3f0dbdd0d7fbf3afeb1b5993e1aa8217",
    "german_rgnn": "f6b785f13efedb26b6722c375b6a72e7c916d3dfe264293f25307779c3fe4e88",
    "student_rgnn": "a8458a690a1ca716b684b437b927fa0480d889dec007df4c5f53dd17b527431f",
}

SOURCES = {
    "cora": Source(*_PLANETOID, _planetoid_files("cora"), planetoid, DIGESTS["cora"]),
    "citeseer": Source(*_PLANETOID, _planetoid_files("citeseer"), planetoid,
                       DIGESTS["citeseer"]),
    "pubmed_nofeatures": Source(*_PLANETOID, _planetoid_files("pubmed", features=False),
                                planetoid, DIGESTS["pubmed_nofeatures"], {"features": False}),
    "facebook": Source(*_MUSAE, _musae_files("facebook"), musae, DIGESTS["facebook"],
                       {"kind": "facebook", "d": 4714}),
    "twitch_ENGB": Source(*_MUSAE, _musae_files("ENGB"), musae, DIGESTS["twitch_ENGB"],
                          {"kind": "twitch", "d": 3170}),
    "wiki_chameleon": Source(*_MUSAE, _musae_files("chameleon"), musae,
                             DIGESTS["wiki_chameleon"], {"kind": "wikipedia", "d": 3132}),
    "lastfm_asia_nofeatures": Source(
        *_FEATHER, {"edges": "new_node_level_dataset/edges/lastfm_asia_edges.csv",
                    "target": "new_node_level_dataset/target/lastfm_asia_target.csv"},
        feather_lastfm, DIGESTS["lastfm_asia_nofeatures"]),
    "german": Source(*_NIFTY, {"csv": "dataset/german/german.csv",
                               "edges": "dataset/german/german_edges.txt"}, nifty_german,
                     DIGESTS["german"]),
    "german_rgnn": Source(*_RGNN, _rgnn_files("german"), rgnn_igraph, DIGESTS["german_rgnn"],
                          {"sens": "Gender"}),
    "student_rgnn": Source(*_RGNN, _rgnn_files("student"), rgnn_igraph,
                           DIGESTS["student_rgnn"], {"sens": "sex"}),
}


_STALE_PART_SECONDS = 6 * 3600


def _remove_stale_parts(folder, name):
    """Remove the temporary folders of builds of ``name`` killed before they cleaned up
    (untouched for hours: a running build writes to its own)."""
    for part in folder.glob(f".part-{name}-*"):
        try:
            if part.is_dir() and time.time() - part.stat().st_mtime > _STALE_PART_SECONDS:
                shutil.rmtree(part, ignore_errors=True)
        except OSError:   # removed by another build meanwhile
            pass


def build_from_source(name, folder, source_url=None, fetch=None):
    """Download ``name``'s raw files, convert, verify, save ``folder/<name>.npz``.

    Returns the path of the written file. The result must match the published
    content digest; otherwise nothing is kept and ``OSError`` is raised, as for a
    raw file that cannot be read. The raw files of a verified build are kept in
    ``folder/raw/<name>`` and reused. ``fetch(url, path)`` downloads one file
    (injected by the loader).
    """
    src = SOURCES[name]
    base = source_url or os.environ.get("SKLDP_SOURCE_URL") or GITHUB_RAW
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / "raw" / name
    _remove_stale_parts(folder, name)
    # this call's own folder and temporary file: concurrent builds (parallel workers on a
    # fresh cache) never read, replace or delete each other's files
    work = Path(tempfile.mkdtemp(dir=folder, prefix=f".part-{name}-"))
    try:
        paths = {}
        for role, rel in src.files.items():
            path = kept / Path(rel).name
            if not path.exists():
                path = work / Path(rel).name
                url = src.url(role, base)
                try:
                    fetch(url, path)
                except OSError as e:
                    raise OSError(
                        f"Could not download the raw file {url} of dataset {name!r}: {e}. "
                        "Point SKLDP_DATASETS_DIR at a folder holding the converted .npz, "
                        "or SKLDP_DATA_URL at a mirror of it.") from e
            paths[role] = path
        try:
            arrays = _convert_checked(name, src, paths, base)
        except Exception:
            for path in paths.values():  # the raw files were bad, the reused ones too
                if path.parent == kept:
                    path.unlink(missing_ok=True)
            raise
        out = folder / f"{name}.npz"
        tmp = work / out.name
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, out)
        kept.mkdir(parents=True, exist_ok=True)
        for path in paths.values():
            if path.parent == work:
                os.replace(path, kept / path.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _convert_checked(name, src, paths, base):
    """``src.convert(paths)``, its failures and a digest mismatch as a clear ``OSError``."""
    try:
        arrays = src.convert(paths, **src.options)
    except Exception as e:  # truncated download, a web page in place of the file, ...
        files = ", ".join(Path(p).name for p in paths.values())
        raise OSError(
            f"Could not read the raw files of dataset {name!r} ({files}, from "
            f"{base}): {type(e).__name__}: {str(e).rstrip('.')}. A file is truncated or not in the "
            "source's format (e.g. a web page served in its place); the raw files were "
            "removed from the cache. Load again to download them afresh; if it fails "
            "again, check the source or mirror (SKLDP_SOURCE_URL).") from e
    got = content_digest(arrays)
    if got != src.digest:
        raise OSError(
            f"Checksum mismatch for dataset {name!r} converted from {src.repo}@"
            f"{src.commit[:12]}: expected content sha256 {src.digest}, got {got}. The "
            "raw files differ from the published ones; they were removed.")
    return arrays
