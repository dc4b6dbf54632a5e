"""Real graph datasets: bundled, local folder, or cached download.

Where a dataset is looked for, in order:

1. the package data: the datasets whose sources allow redistribution ship
   with skldp (``BUNDLED``: Cora, CiteSeer and the PubMed graph from
   Planetoid, MIT; the LastFM Asia graph from FEATHER, MIT; German credit
   from NIFTY, MIT, of the UCI data, CC BY 4.0);
2. the folder named by the environment variable ``SKLDP_DATASETS_DIR``
   (e.g. a shared folder of prepared ``.npz`` files); set to a path that is not
   a folder, it is an error (``NotADirectoryError``) for the datasets not
   bundled, never skipped;
3. the cache folder ``data_home`` (``SKLDP_DATA_HOME``, default
   ``~/.cache/skldp``);
4. a download into the cache: from a mirror of the ``.npz`` files if one is
   configured (``base_url`` argument or ``SKLDP_DATA_URL``), otherwise from the
   dataset's original public repository at a pinned commit: the raw files
   (Planetoid pickles, MUSAE/FEATHER csv and json, NIFTY csv, RGNN igraph
   pickles) are downloaded and converted (:mod:`._sources`).

Every file is checked before it is read: a ready ``.npz`` against its sha256,
a converted one against the sha256 of its canonical arrays. A mismatch is an
error, never a silent fallback.
"""

import hashlib
import io
import os
import shutil
import tempfile
import urllib.request
from importlib import resources
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from .._graph_data import GraphData
from ._sources import SOURCES, build_from_source, canonical, content_digest

__all__ = ["load_dataset", "load_cora", "load_citeseer", "list_datasets", "get_data_home",
           "fetch_file", "DATASETS", "BUNDLED"]

# Shipped as package data (2-242 kB each, 0.8 MB together): their sources' licences
# allow redistribution. The MUSAE graphs (GPL-3.0) and RGNN's graphs (no licence stated)
# are downloaded from their sources instead.
BUNDLED = frozenset({"cora", "citeseer", "german", "lastfm_asia_nofeatures",
                     "pubmed_nofeatures"})

# name -> (sha256, bytes, short description); statistics of the reference files' documentation
DATASETS = {
    "citeseer": ("7f3845dfa21373676795cfa3db6f51680a6900a6b3dc42492f435301992cbe1f", 210349,
                 "CiteSeer citation graph (Planetoid public split): 3327 nodes, 4552 edges, "
                 "3703 binary bag-of-words features, 6 classes; 15 padded test ids are "
                 "unlabelled (-1), 48 nodes are isolated. Yang et al., ICML 2016; Sen et al., "
                 "AI Magazine 2008."),
    "cora": ("0a8727f3c05b608149c76071d584e35b2fe1d36b00009961c9401b096127c826", 109123,
             "Cora citation graph (Planetoid public split 140/500/1000): 2708 nodes, 5278 "
             "edges, 1433 binary bag-of-words features, 7 classes. Yang et al., ICML 2016; "
             "Sen et al., AI Magazine 2008."),
    "facebook": ("e324ac3f30bd72d7b46bffd0ff382fce07e96879c31bec1bec521e4f8b4ff601", 1235492,
                 "MUSAE Facebook page-page graph: 22470 nodes, 170823 edges, 4714 binary "
                 "features, 4 page types (company, government, politician, tvshow). "
                 "Rozemberczki et al., J. Complex Networks 2021."),
    "german": ("cd73ab7a1a6e98cebd9527b09ff936b1211327724f23757f7e6901162e993da9", 76039,
               "German credit graph (NIFTY): 1000 nodes, 21742 edges, 27 raw numeric "
               "features (not normalised), 2 classes (good customer), sens = gender. "
               "Agarwal et al., UAI 2021."),
    "german_rgnn": ("ba3d0cc7ec1e05a5429127c8e5c0d1f0bfb18162d98ef96e225d1acfce9d8ab1", 43940,
                    "German credit, semi-synthetic graph of RGNN: 955 nodes, 9990 edges, "
                    "38 raw features, 2 classes. Bhaila et al., SDM 2024."),
    "lastfm_asia_nofeatures": (
        "29ca71a821ddf051a485c348648df06f86d633c76ba101a38f31ef6e0bd9134b", 128563,
        "LastFM Asia (FEATHER): 7624 nodes, 27806 edges, NO features (not obtainable), "
        "18 country classes; top10_mask marks the 10 most frequent classes. "
        "Rozemberczki & Sarkar, CIKM 2020."),
    "pubmed_nofeatures": (
        "964d5f601720d591177aef59544f943e28a2f8fcef3c8354b4e04f5f60e1c050", 242402,
        "PubMed citation graph (Planetoid split 60/500/1000): 19717 nodes, 44324 edges, "
        "NO features (the TF-IDF matrix could not be obtained), 3 classes."),
    "student_rgnn": ("604f9f1a20e942584c813968a4d47aa7d8787bd443f7622b989dcaf812fd2601", 24916,
                     "UCI Student Performance, semi-synthetic graph of RGNN: 577 nodes, 4243 "
                     "edges, 32 raw features, 2 classes. Bhaila et al., SDM 2024."),
    "twitch_ENGB": ("b3f1c4375e39c8b52939fa7a318f4c7b56483dfdd29f998fde6eb2988496b064", 346059,
                    "MUSAE Twitch ENGB: 7126 nodes, 35324 edges, 3170 binary features, 2 "
                    "classes (mature). Rozemberczki et al., J. Complex Networks 2021."),
    "wiki_chameleon": ("8481fb6658e616b3869cb86eefd496e5e83292bc8313bb8f9702cbcbead474c5", 152034,
                       "MUSAE Wikipedia chameleon: 2277 nodes, 31371 edges, 3132 binary "
                       "features; y = our own 5 equal-frequency bins of monthly traffic "
                       "(raw value in `traffic`). Rozemberczki et al. 2021."),
}

_EXTRAS = ("class_names", "sens", "feature_names", "traffic", "top10_mask")


def list_datasets():
    """Names accepted by :func:`load_dataset`."""
    return sorted(DATASETS)


def get_data_home(data_home=None):
    """The cache folder, created if needed.

    Parameters
    ----------
    data_home : str or path, default=None
        The folder to use; ``None`` takes ``$SKLDP_DATA_HOME``, else
        ``~/.cache/skldp``.

    Returns
    -------
    path : pathlib.Path
        The (existing) cache folder.

    Raises
    ------
    NotADirectoryError
        If the folder, or one of its parents, is a file.
    """
    from_env = not data_home and os.environ.get("SKLDP_DATA_HOME")
    path = Path(data_home or os.environ.get("SKLDP_DATA_HOME")
                or Path.home() / ".cache" / "skldp").expanduser()
    blocker = _file_in_the_way(path)
    if blocker is not None:
        given = f"{path} (SKLDP_DATA_HOME)" if from_env else str(path)
        raise NotADirectoryError(
            f"The data home {given} cannot be a folder: {blocker} is a file, not a folder. "
            "Give another folder (data_home=..., or the SKLDP_DATA_HOME variable), or "
            "move the file away.")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _file_in_the_way(folder):
    """The first of ``folder`` and its parents that exists and is not a folder, or None
    (``mkdir(parents=True)`` would fail on it with a bare FileExistsError)."""
    for p in (folder, *folder.parents):
        if p.exists():
            return None if p.is_dir() else p
    return None


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verified(path, sha256, name):
    """The arrays of the file at ``path``, exactly those that were checked.

    The reference file (its sha256) is read as it is: its arrays are canonical. Another
    container (saved again, uncompressed) is accepted when its canonical arrays match the
    content digest, and those canonical arrays are returned: its raw ones may differ
    (one-sided edges, self loops, duplicates, float64 features) and must not be loaded.
    """
    size = Path(path).stat().st_size
    if size > 64 * DATASETS[name][1] + 2**20:   # (room for an uncompressed re-save)
        raise OSError(f"Checksum mismatch for dataset {name!r} at {path}: the file has "
                      f"{size} bytes, the expected one {DATASETS[name][1]}. The file is not "
                      "the expected version; delete it and load again.")
    data = Path(path).read_bytes()  # one read: what is checked is what is loaded
    got = hashlib.sha256(data).hexdigest()
    if got == sha256:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = canonical({k: z[k] for k in z.files})
    except Exception:  # not a readable npz of the uniform arrays: it cannot match
        arrays = None
    if arrays is None or content_digest(arrays) != SOURCES[name].digest:
        raise OSError(f"Checksum mismatch for dataset {name!r} at {path}: expected sha256 "
                      f"{sha256}, got {got}. The file is corrupt or not the expected "
                      "version; delete it and load again.")
    return arrays


def fetch_file(url, path, sha256=None, timeout=60):
    """Download ``url`` to ``path`` atomically; if ``sha256`` is given, verify it first.

    Parameters
    ----------
    url : str
        Address to download.
    path : str or path
        Destination file; written only once the download (and the checksum)
        succeeded. Its folder is created if needed.
    sha256 : str, default=None
        Expected hex digest of the file.
    timeout : float, default=60
        Seconds before the connection gives up.

    Returns
    -------
    path : pathlib.Path
        The downloaded file.

    Raises
    ------
    OSError
        If the checksum does not match, or ``path`` is a folder or lies under a file.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot save to {path}: it is a folder; give the path of "
                                "the file to write.")
    blocker = _file_in_the_way(path.parent)
    if blocker is not None:
        raise NotADirectoryError(f"cannot save {path}: {blocker} is a file, not a folder. "
                                 "Give a path in a folder, or move the file away.")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            shutil.copyfileobj(resp, out)
        if sha256 is not None:
            got = _sha256(tmp)
            if got != sha256:
                raise OSError(f"Checksum mismatch for {path.name} downloaded from {url}: "
                              f"expected sha256 {sha256}, got {got}.")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _locate(name, data_home, base_url, download_if_missing, source_url=None):
    sha, _, _ = DATASETS[name]
    fname = f"{name}.npz"
    if name in BUNDLED:
        with resources.as_file(resources.files("skldp.datasets") / "data" / fname) as p:
            if p.exists():
                return p
    local = os.environ.get("SKLDP_DATASETS_DIR")
    if local:
        folder = Path(local).expanduser()
        if not folder.is_dir():
            # a mistyped folder was skipped silently: the dataset then came from the cache
            # or failed later with a download error that did not name the folder
            what = "is not a folder" if folder.exists() else "does not exist"
            raise NotADirectoryError(
                f"SKLDP_DATASETS_DIR is set to {local!r}, which {what}. Dataset {name!r} is "
                "not bundled with skldp and is looked for in that folder before the cache "
                f"and a download: point SKLDP_DATASETS_DIR at the folder holding {fname}, "
                "or unset it to use the cache (SKLDP_DATA_HOME) and the download.")
        p = folder / fname
        if p.exists():
            return p
    cached = get_data_home(data_home) / fname
    if cached.exists():
        return cached
    if not download_if_missing:
        raise FileNotFoundError(
            f"Dataset {name!r} is not bundled with skldp and was not found: not in "
            f"SKLDP_DATASETS_DIR "
            f"({local or 'unset'}) nor in the cache {cached.parent}, and "
            "download_if_missing=False. Point SKLDP_DATASETS_DIR at a folder holding "
            f"{fname}, or allow the download.")
    base_url = base_url or os.environ.get("SKLDP_DATA_URL")
    try:
        if base_url:
            return fetch_file(base_url.rstrip("/") + "/" + fname, cached, sha)
        return build_from_source(name, cached.parent, source_url, fetch=fetch_file)
    except OSError as e:
        if not local:
            raise
        # the user meant the folder to be used: say it was looked in, and missed
        raise OSError(f"{e} (SKLDP_DATASETS_DIR is set to {local!r}, which holds no "
                      f"{fname}: the cache {cached.parent} and then a download were "
                      "tried.)") from e


def _unpack(z):
    """The graph of a dataset's verified arrays (see :func:`_verified`)."""
    n = int(z["adj_shape"][0])
    A = sp.csr_matrix((np.ones(len(z["adj_indices"]), np.float32), z["adj_indices"],
                       z["adj_indptr"]), shape=tuple(z["adj_shape"]))
    X = sp.csr_matrix((z["X_data"], z["X_indices"], z["X_indptr"]), shape=tuple(z["X_shape"]))
    # Bag-of-words stays sparse; small tabular data becomes dense.
    features = X.toarray() if X.shape[1] <= 100 else X
    names = z["feature_names"] if "feature_names" in z else None
    out = {"A": A, "X": features, "y": z["y"].astype(np.int64), "n": n, "names": names}
    for key in ("train_mask", "val_mask", "test_mask") + _EXTRAS:
        if key in z:
            out[key] = z[key]
    return out


#: Datasets whose features are binary by their schema (bag-of-words, MUSAE's): their
#: public bounds are (0, 1), known without reading any user's value.
_BINARY_FEATURES = frozenset({"citeseer", "cora", "facebook", "twitch_ENGB", "wiki_chameleon"})


def load_dataset(name, *, data_home=None, base_url=None, source_url=None,
                 download_if_missing=True):
    """Load a real graph dataset as a scikit-learn :class:`~sklearn.utils.Bunch`.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`.
    data_home : str or path, default=None
        Cache folder for downloads (default ``$SKLDP_DATA_HOME`` or ``~/.cache/skldp``).
    base_url : str, default=None
        Mirror to download ``<name>.npz`` from when the file is not found
        locally (default ``$SKLDP_DATA_URL``). Without a mirror the raw files
        are downloaded from the dataset's original repository and converted.
    source_url : str, default=None
        Prefix replacing ``https://raw.githubusercontent.com`` for the original
        raw files (default ``$SKLDP_SOURCE_URL``): a local copy laid out as
        ``<owner>/<repo>/<commit>/<path>``.
    download_if_missing : bool, default=True
        If False, raise instead of downloading.

    Returns
    -------
    bunch : Bunch
        ``data`` (:class:`~skldp.GraphData` of all nodes), ``target`` (int,
        ``-1`` = unlabelled), ``train_mask``/``val_mask``/``test_mask`` where the
        source defines a split, ``feature_names``, ``DESCR``, ``name``,
        ``feature_range`` (the features' public bounds where the dataset's
        schema fixes them, ``(0.0, 1.0)`` for binary features, else ``None``)
        and the extras of the file (``class_names``, ``sens``, ``traffic``,
        ``top10_mask``).

    Raises
    ------
    ValueError
        If ``name`` is not a dataset of :func:`list_datasets`.
    NotADirectoryError
        If ``SKLDP_DATASETS_DIR`` is set to a path that is not a folder and the
        dataset is not bundled (a bundled one loads from the package).
    FileNotFoundError
        If the dataset is found nowhere and ``download_if_missing=False``.
    OSError
        If a file fails its checksum, a download fails, or the downloaded raw
        files cannot be read or converted to the published content.

    Examples
    --------
    >>> from skldp.datasets import load_dataset
    >>> cora = load_dataset("cora")
    >>> cora.data.shape, int(cora.train_mask.sum())
    ((2708, 1433), 140)
    """
    if name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {list_datasets()}.")
    path = _locate(name, data_home, base_url, download_if_missing, source_url)
    raw = _unpack(_verified(path, DATASETS[name][0], name))
    names = raw.pop("names")
    G = GraphData(raw["X"], raw["A"], feature_names=names)
    bunch = Bunch(data=G, target=raw["y"], feature_names=names, name=name,
                  DESCR=DATASETS[name][2], filename=str(path),
                  feature_range=(0.0, 1.0) if name in _BINARY_FEATURES else None)
    for key in ("train_mask", "val_mask", "test_mask") + _EXTRAS:
        if key in raw and key != "feature_names":
            bunch[key] = raw[key]
    return bunch


def load_cora(**kwargs):
    """Cora with the Planetoid public split, from the package data.

    Parameters
    ----------
    **kwargs
        Passed to :func:`load_dataset`.

    Returns
    -------
    bunch : Bunch
        See :func:`load_dataset`.
    """
    return load_dataset("cora", **kwargs)


def load_citeseer(**kwargs):
    """CiteSeer with the Planetoid public split, from the package data.

    Parameters
    ----------
    **kwargs
        Passed to :func:`load_dataset`.

    Returns
    -------
    bunch : Bunch
        See :func:`load_dataset`.
    """
    return load_dataset("citeseer", **kwargs)
