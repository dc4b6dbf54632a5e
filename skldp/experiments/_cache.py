"""An opt-in on-disk cache of whole-graph step outputs, shared by processes."""

import hashlib
import logging
import os
import threading
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .. import base as _base

__all__ = ["GraphCache", "graph_content_key"]

logger = logging.getLogger("skldp.experiments")

_FORMAT = "skldp-graph-cache-v1"
# store token -> (content key, features are reports); per process, never pickled.
_LINEAGE = {}
_LINEAGE_LOCK = threading.Lock()


def _hash_array(h, X):
    if X is None:
        h.update(b"none")
        return
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        h.update(f"csr{X.shape}{X.dtype}".encode())
        for part in (X.data, X.indices, X.indptr):
            h.update(np.ascontiguousarray(part).view(np.uint8))
        return
    X = np.ascontiguousarray(X)
    if X.dtype == object:
        h.update(repr(X.tolist()).encode())
        return
    h.update(f"dense{X.shape}{X.dtype}".encode())
    h.update(X.view(np.uint8))


def graph_content_key(G):
    """Content hash of the whole graph behind a :class:`~skldp.GraphData` view.

    The features, the adjacency, the node ids and the feature names of all
    nodes (not only the view's rows) are hashed, so two graphs with the same
    key give every graph step the same input. The key is computed once per
    graph and process; graphs derived by a cached step get the key of their
    lineage instead (no second hash).

    Parameters
    ----------
    G : GraphData
        Any view of the graph.

    Returns
    -------
    key : str
        A hexadecimal blake2b digest.
    """
    st = G._store
    with _LINEAGE_LOCK:
        known = _LINEAGE.get(st.token)
    if known is not None:
        return known[0]
    h = hashlib.blake2b(digest_size=20, person=b"skldp-graph")
    _hash_array(h, st.features)
    _hash_array(h, st.adjacency)
    _hash_array(h, st.node_ids)
    h.update(repr(None if st.feature_names is None else list(st.feature_names)).encode())
    key = h.hexdigest()
    with _LINEAGE_LOCK:
        _LINEAGE.setdefault(st.token, (key, False))
    return key


def _is_private(token):
    with _LINEAGE_LOCK:
        known = _LINEAGE.get(token)
    return bool(known and known[1])


def _reports_features(step):
    """Whether ``step`` is a fitted local DP feature mechanism of finite budget."""
    eps = getattr(step, "epsilon_", None)
    return (isinstance(step, _base.LDPMechanism) and eps is not None
            and np.isfinite(eps) and "features" in tuple(getattr(step, "protects_", ())))


class GraphCache:
    """On-disk cache of the whole-graph outputs of graph steps, shared by processes.

    Inside ``with GraphCache(location):`` every graph step (mechanisms,
    propagation) looks its whole-graph output up on disk before computing it,
    keyed by the fitted step and a content hash of the input graph, so an
    output computed by one process is read by every other. Only reports and
    functions of reports are stored unless ``allow_raw=True``; the directory
    is as sensitive as the reports.

    Read more in the :ref:`User Guide <graph_cache>`.

    Parameters
    ----------
    location : str or path-like
        Directory of the cache (created if needed). It may be shared by
        processes on one machine, or by machines on a file system with
        working ``flock``.
    allow_raw : bool, default=False
        Also store outputs computed from raw (non-perturbed) features. Only
        for simulations on data that may be written where the cache lives.
    mmap_mode : {None, "r"}, default=None
        Passed to :func:`joblib.load` when an entry is read (``"r"`` maps
        large dense outputs instead of reading them into memory).

    Attributes
    ----------
    hits : int
        Entries read from disk by this process (this object).
    misses : int
        Entries computed and written by this process (this object).
    skipped : int
        Outputs computed but not written (raw, or not cacheable).

    See Also
    --------
    skldp.experiments.CachedPipeline : A Pipeline that activates a cache where it runs.

    Examples
    --------
    >>> import tempfile
    >>> from sklearn.pipeline import Pipeline
    >>> from skldp.datasets import load_cora
    >>> from skldp.experiments import GraphCache
    >>> from skldp.mechanisms import HDSMechanism
    >>> from skldp.propagation import PPRPropagation
    >>> G = load_cora().data
    >>> pipe = Pipeline([("hds", HDSMechanism(eps=1, feature_range=(0, 1), random_state=0)),
    ...                  ("ppr", PPRPropagation())])
    >>> with tempfile.TemporaryDirectory() as d, GraphCache(d) as cache:
    ...     Z = pipe.fit_transform(G)
    ...     (cache.misses, cache.hits)
    (2, 0)
    """

    def __init__(self, location, *, allow_raw=False, mmap_mode=None):
        if location is None or str(location) == "":
            raise ValueError("GraphCache needs a directory (location), got "
                             f"{location!r}.")
        if mmap_mode not in (None, "r"):
            raise ValueError(f"mmap_mode must be None or 'r', got {mmap_mode!r}.")
        self.location = Path(location)
        self.allow_raw = bool(allow_raw)
        self.mmap_mode = mmap_mode
        self.hits = 0
        self.misses = 0
        self.skipped = 0

    def __repr__(self):
        return f"GraphCache({str(self.location)!r}, allow_raw={self.allow_raw})"

    # pickled to workers without its counters
    def __getstate__(self):
        return {"location": self.location, "allow_raw": self.allow_raw,
                "mmap_mode": self.mmap_mode}

    def __setstate__(self, state):
        self.__init__(state["location"], allow_raw=state["allow_raw"],
                      mmap_mode=state["mmap_mode"])

    # ------------------------------------------------------------ activation
    def __enter__(self):
        self.location.mkdir(parents=True, exist_ok=True)
        _base._GRAPH_CACHES.append(self)
        return self

    def __exit__(self, *exc):
        stack = _base._GRAPH_CACHES
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                break
        return False

    # --------------------------------------------------------------- entries
    def _path(self, key):
        return self.location / key[:2] / f"{key}.joblib"

    def entries(self):
        """Paths of the entries on disk.

        Returns
        -------
        paths : list of pathlib.Path
        """
        return sorted(self.location.glob("*/*.joblib"))

    def clear(self):
        """Delete every entry (and lock file) of the cache directory."""
        for p in list(self.location.glob("*/*.joblib")) + list(self.location.glob("*/*.lock")):
            p.unlink(missing_ok=True)

    def fetch(self, step, full, token, compute):
        """Return the whole-graph output of ``step`` on ``full``, from disk if stored.

        Called by :class:`~skldp.base.GraphTransformerMixin` while the cache is
        active; ``compute()`` is called only when the entry is missing.

        Parameters
        ----------
        step : estimator
            The fitted graph step.
        full : GraphData
            The view of all nodes of the input graph.
        token : str
            ``fitted_token(step)``.
        compute : callable
            Computes the output (a GraphData over all nodes).

        Returns
        -------
        out : GraphData
        """
        import joblib

        in_key = graph_content_key(full)
        private = _reports_features(step) or _is_private(full.token)
        key = hashlib.blake2b(f"{_FORMAT}|{in_key}|{token}".encode(), digest_size=20,
                              person=b"skldp-entry").hexdigest()
        if not (private or self.allow_raw) or token.startswith(_base.UNSHARED):
            out = compute()   # (raw data, or a step that keys nothing twice)
            self.skipped += 1
            self._register(out, key, private)
            return out
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with _FileLock(path.with_suffix(".lock")):
            out = self._read(path, full) if path.exists() else None
            if out is not None:
                self.hits += 1
                logger.debug("graph cache hit %s (%s)", key[:12], type(step).__name__)
            else:
                out = compute()
                if self._writable(out, full):
                    tmp = path.with_suffix(f".tmp{os.getpid()}")
                    joblib.dump({"format": _FORMAT, "features": out.features,
                                 "feature_names": out.feature_names}, tmp)
                    os.replace(tmp, path)  # atomic: readers never see half an entry
                    self.misses += 1
                    logger.debug("graph cache write %s (%s)", key[:12], type(step).__name__)
                else:
                    self.skipped += 1
        self._register(out, key, private)
        return out

    def _read(self, path, full):
        import joblib
        try:
            entry = joblib.load(path, mmap_mode=self.mmap_mode)
        except Exception as exc:  # a damaged entry is recomputed, not trusted
            logger.warning("graph cache entry %s unreadable (%s); recomputing", path, exc)
            return None
        if not isinstance(entry, dict) or entry.get("format") != _FORMAT:
            return None
        return full.with_features(entry["features"], feature_names=entry["feature_names"])

    @staticmethod
    def _writable(out, full):
        # Only new features over the same graph and users: the adjacency is never written.
        from .._graph_data import GraphData
        return (isinstance(out, GraphData) and out.adjacency is full.adjacency
                and out._store.node_ids is full._store.node_ids
                and out.shape[0] == full.shape[0])

    @staticmethod
    def _register(out, key, private):
        st = getattr(out, "_store", None)
        if st is not None:
            with _LINEAGE_LOCK:
                _LINEAGE[st.token] = (key, bool(private))


class _FileLock:
    """Exclusive ``flock`` on a lock file (a no-op where fcntl is missing)."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return self
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            import fcntl
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        return False
