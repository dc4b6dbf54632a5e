"""Dataset loaders: statistics of every dataset, checksums, download path, errors."""

import re
import shutil

import numpy as np
import pytest

from skldp import GraphData
from skldp.datasets import (
    BUNDLED,
    DATASETS,
    _loaders,
    list_datasets,
    load_citeseer,
    load_cora,
    load_dataset,
)

# From the datasets' documentation (statistics of the converted files):
# nodes, edges, features, classes, labelled, isolated, split (train, val, test) or None
STATS = {
    "citeseer": (3327, 4552, 3703, 6, 3312, 48, (120, 500, 1000)),
    "cora": (2708, 5278, 1433, 7, 2708, 0, (140, 500, 1000)),
    "facebook": (22470, 170823, 4714, 4, 22470, 0, None),
    "german": (1000, 21742, 27, 2, 1000, 0, None),
    "german_rgnn": (955, 9990, 38, 2, 955, 0, None),
    "lastfm_asia_nofeatures": (7624, 27806, 0, 18, 7624, 0, None),
    "pubmed_nofeatures": (19717, 44324, 0, 3, 19717, 0, (60, 500, 1000)),
    "student_rgnn": (577, 4243, 32, 2, 577, 0, None),
    "twitch_ENGB": (7126, 35324, 3170, 2, 7126, 0, None),
    "wiki_chameleon": (2277, 31371, 3132, 5, 2277, 0, None),
}


def test_every_dataset_is_listed():
    assert list_datasets() == sorted(STATS)
    assert BUNDLED < set(STATS)


@pytest.mark.parametrize("name", sorted(STATS))
def test_dataset_statistics(name, dataset_file):
    dataset_file(name)  # skips a dataset that is neither bundled nor available offline
    b = load_dataset(name)
    n, m, d, c, labelled, isolated, split = STATS[name]
    G, y = b.data, b.target
    assert isinstance(G, GraphData) and G.shape == (n, d) and G.n_nodes == n
    A = G.adjacency
    assert A.shape == (n, n) and A.nnz == 2 * m
    assert G.is_symmetric() and A.diagonal().sum() == 0
    assert y.shape == (n,) and y.dtype == np.int64
    assert int((y >= 0).sum()) == labelled
    assert len(np.unique(y[y >= 0])) == c
    assert int((np.diff(A.indptr) == 0).sum()) == isolated
    if split is None:
        assert "train_mask" not in b
    else:
        assert tuple(int(b[k].sum()) for k in ("train_mask", "val_mask", "test_mask")) == split
        assert not np.any(b.train_mask & b.test_mask)
    assert b.name == name and b.DESCR == DATASETS[name][2]


def test_extras():
    lf = load_dataset("lastfm_asia_nofeatures")
    assert int(lf.top10_mask.sum()) == 7083
    ge = load_dataset("german")
    assert len(ge.feature_names) == 27 and ge.sens.shape == (1000,)
    assert list(ge.data.feature_names) == list(ge.feature_names)
    assert isinstance(ge.data.features, np.ndarray)  # small tabular data is dense


@pytest.mark.parametrize("name, check", [
    ("facebook", lambda b: list(b.class_names) == ["company", "government", "politician",
                                                   "tvshow"]),
    ("wiki_chameleon", lambda b: b.traffic.dtype == np.float64)])
def test_extras_of_downloaded_datasets(name, check, dataset_file):
    dataset_file(name)
    assert check(load_dataset(name))


def test_bundled_without_env(monkeypatch, tmp_path):
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    monkeypatch.setenv("SKLDP_DATA_HOME", str(tmp_path))
    assert load_cora().data.shape == (2708, 1433)
    assert load_citeseer().data.shape == (3327, 3703)
    for name in sorted(BUNDLED):  # no download: the unreachable mirror is never asked
        b = load_dataset(name, base_url="http://127.0.0.1:9", download_if_missing=False)
        assert b.data.shape[0] == STATS[name][0]
        assert "skldp" in b.filename and "datasets" in b.filename
    assert list(tmp_path.iterdir()) == []


def _corrupt_copy(name, folder, dataset_file):
    data = bytearray(dataset_file(name).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / f"{name}.npz").write_bytes(bytes(data))


def test_checksum_mismatch_raises(monkeypatch, tmp_path, dataset_file):
    _corrupt_copy("german", tmp_path, dataset_file)
    monkeypatch.setattr(_loaders, "BUNDLED", frozenset())  # read the folder's copy
    monkeypatch.setenv("SKLDP_DATASETS_DIR", str(tmp_path))
    monkeypatch.setenv("SKLDP_DATA_HOME", str(tmp_path / "cache"))
    with pytest.raises(OSError, match="Checksum mismatch for dataset 'german'"):
        load_dataset("german")


def test_file_not_found_message(monkeypatch, tmp_path):
    monkeypatch.setattr(_loaders, "BUNDLED", frozenset())
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    monkeypatch.setenv("SKLDP_DATA_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="SKLDP_DATASETS_DIR") as e:
        load_dataset("german", download_if_missing=False)
    assert "german.npz" in str(e.value) and "download_if_missing=False" in str(e.value)
    with pytest.raises(FileNotFoundError):
        load_dataset("german", base_url="http://127.0.0.1:9", download_if_missing=False)
    # the original source cannot be reached (port 9 is closed): a clear error, nothing kept
    with pytest.raises(OSError, match="Could not download the raw file .*german.csv"):
        load_dataset("german", source_url="http://127.0.0.1:9")
    assert list(tmp_path.iterdir()) == []


def test_datasets_dir_that_is_not_a_folder_is_an_error(monkeypatch, tmp_path):
    """A mistyped SKLDP_DATASETS_DIR was skipped silently: the loader went on to the cache
    and a download, whose error did not say the folder was missing."""
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SKLDP_DATA_HOME", str(cache))
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for path, what in ((tmp_path / "missing", "does not exist"), (a_file, "is not a folder")):
        monkeypatch.setenv("SKLDP_DATASETS_DIR", str(path))
        with pytest.raises(NotADirectoryError,
                           match=f"SKLDP_DATASETS_DIR is set to '{path}', which {what}. "
                                 "Dataset 'student_rgnn' is not bundled"):
            # the unreachable source (port 9): no download is tried, nothing is cached
            load_dataset("student_rgnn", source_url="http://127.0.0.1:9")
        with pytest.raises(NotADirectoryError, match="SKLDP_DATASETS_DIR"):
            _loaders._locate("student_rgnn", None, None, download_if_missing=False)
        # the bundled datasets load from the package whatever the variable says
        assert load_cora().data.shape == (2708, 1433)
    assert not cache.exists()
    # an existing folder without the file: on to the cache (then the download), as before
    monkeypatch.setenv("SKLDP_DATASETS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="student_rgnn.npz"):
        load_dataset("student_rgnn", download_if_missing=False)


def test_download_error_says_the_datasets_dir_lacks_the_file(monkeypatch, tmp_path):
    # the download's error suggested setting SKLDP_DATASETS_DIR, already set to a folder
    monkeypatch.delenv("SKLDP_DATA_URL", raising=False)
    monkeypatch.setenv("SKLDP_DATA_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "datasets"
    folder.mkdir()
    monkeypatch.setenv("SKLDP_DATASETS_DIR", str(folder))
    msg = re.escape(f"SKLDP_DATASETS_DIR is set to '{folder}', which holds no student_rgnn.npz")
    for where in ({"source_url": "http://127.0.0.1:9"}, {"base_url": "http://127.0.0.1:9"}):
        with pytest.raises(OSError, match=msg):  # port 9 is closed
            load_dataset("student_rgnn", **where)


def test_unknown_dataset():
    with pytest.raises(ValueError, match="Unknown dataset 'nope'"):
        load_dataset("nope")


def test_download_into_cache(monkeypatch, tmp_path, server, dataset_file):
    # the mirror serves copies of bundled files; skldp acts as if none were bundled
    root, url = server
    shutil.copy(dataset_file("german"), root / "german.npz")
    lastfm = dataset_file("lastfm_asia_nofeatures")
    monkeypatch.setattr(_loaders, "BUNDLED", frozenset())
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SKLDP_DATA_HOME", str(cache))
    monkeypatch.setenv("SKLDP_DATA_URL", url + "/")
    b = load_dataset("german")
    assert b.data.shape == (1000, 27)
    assert (cache / "german.npz").exists() and b.filename == str(cache / "german.npz")
    # the second load reads the cache: the mirror is no longer needed
    (root / "german.npz").unlink()
    monkeypatch.setenv("SKLDP_DATA_URL", "http://127.0.0.1:9")
    assert load_dataset("german").data.shape == (1000, 27)
    # the base_url argument works too
    shutil.copy(lastfm, root / "lastfm_asia_nofeatures.npz")
    monkeypatch.delenv("SKLDP_DATA_URL")
    assert load_dataset("lastfm_asia_nofeatures", base_url=url).data.shape == (7624, 0)


def test_download_bad_checksum_keeps_nothing(monkeypatch, tmp_path, server, dataset_file):
    root, url = server
    _corrupt_copy("lastfm_asia_nofeatures", root, dataset_file)
    monkeypatch.setattr(_loaders, "BUNDLED", frozenset())
    monkeypatch.delenv("SKLDP_DATASETS_DIR", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SKLDP_DATA_HOME", str(cache))
    with pytest.raises(OSError, match="Checksum mismatch"):
        load_dataset("lastfm_asia_nofeatures", base_url=url)
    assert list(cache.iterdir()) == []  # no corrupt file, no partial download left
    with pytest.raises(OSError):  # urllib HTTPError
        load_dataset("german", base_url=url)  # 404 from the mirror
    assert list(cache.iterdir()) == []


def test_fetch_file_creates_the_destination_folder(tmp_path):
    # a destination in a new folder raised a raw FileNotFoundError (from mkstemp) while
    # get_data_home creates its folder; a file URL: no network
    src = tmp_path / "src.bin"
    src.write_bytes(b"some bytes")
    dest = tmp_path / "new" / "deeper" / "dest.bin"
    assert _loaders.fetch_file(src.as_uri(), dest) == dest
    assert dest.read_bytes() == b"some bytes"
    assert [p.name for p in dest.parent.iterdir()] == ["dest.bin"]   # no partial file left
    # a file where the folder would be, or a folder at the destination: refused, named,
    # before any download (the unreachable port 9 is never asked)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(NotADirectoryError, match=re.escape(
            f"cannot save {blocker / 'sub' / 'dest.bin'}: {blocker} is a file, not a folder")):
        _loaders.fetch_file("http://127.0.0.1:9/x", blocker / "sub" / "dest.bin")
    with pytest.raises(IsADirectoryError, match=re.escape(
            f"cannot save to {dest.parent}: it is a folder; give the path of the file")):
        _loaders.fetch_file("http://127.0.0.1:9/x", dest.parent)


def test_get_data_home_that_is_a_file_is_refused(monkeypatch, tmp_path):
    # a raw FileExistsError ("[Errno 17] File exists") or NotADirectoryError
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for given, blocker in ((a_file, a_file), (a_file / "sub", a_file)):
        with pytest.raises(NotADirectoryError, match=re.escape(
                f"The data home {given} cannot be a folder: {blocker} is a file, not a "
                "folder.") + ".*data_home=.*SKLDP_DATA_HOME"):
            _loaders.get_data_home(given)
        monkeypatch.setenv("SKLDP_DATA_HOME", str(given))
        with pytest.raises(NotADirectoryError, match=r"\(SKLDP_DATA_HOME\)"):
            _loaders.get_data_home()
    assert _loaders.get_data_home(tmp_path / "x" / "y").is_dir()   # created, as before
