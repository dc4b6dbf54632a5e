"""The device encoder's test vectors: replayed bit for bit, in an environment without
scikit-learn, scipy or torch, and the server's simulation gives the same reports."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import skldp
from skldp import GraphData
from skldp.device import KINDS, encode, plan, read_spec
from skldp.device._random import ids_to_keys
from skldp.mechanisms import (
    EdgeRR,
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
    SetValuedMechanism,
)
from skldp.population import collection_spec, label_digests, report_keys
from skldp.population._digest import feature_digests, list_digests

VECTORS = Path(skldp.__file__).parent / "device" / "vectors"


def _cases():
    for path in sorted(VECTORS.glob("*.json")):
        doc = json.loads(path.read_text())
        for i, case in enumerate(doc["cases"]):
            yield pytest.param(doc["kind"], case, id=f"{path.stem}-{i}")


def test_every_kind_has_vectors():
    kinds = {json.loads(p.read_text())["kind"] for p in VECTORS.glob("*.json")}
    assert kinds == set(KINDS)
    for path in VECTORS.glob("*.json"):
        assert len(json.loads(path.read_text())["cases"]) >= 2


@pytest.mark.parametrize("kind,case", list(_cases()))
def test_vectors_replay_exactly(kind, case):
    spec = read_spec(case["spec"])
    assert spec.kind == kind
    extra = {k: case[k] for k in ("user", "directory") if k in case}
    report = encode(spec, case["input"], seed=int(case["seed"], 16), key=int(case["key"], 16),
                    **extra)
    assert report == case["report"]
    plan(spec).check(report)   # the server accepts it
    # another key gives another report (the vectors pin the randomness, not a constant)
    others = [encode(spec, case["input"], seed=int(case["seed"], 16), key=k, **extra)
              for k in range(1, 40)]
    assert any(o != report for o in others)


def _vectors(name):
    return json.loads((VECTORS / f"{name}.json").read_text())["cases"]


# Kinds whose vectors catch a port drawing plain uniforms in at least two cases.
_FINE_KINDS = ("OneBitMechanism", "MultiBitMechanism", "PiecewiseMechanism", "HDSMechanism",
               "LaplaceMechanism", "SetValuedMechanism", "LabelRandomizedResponse",
               "GRRFSMechanism")


@pytest.mark.filterwarnings("ignore:.*outside the collection's public domain")
def test_vectors_tell_plain_uniforms_apart(monkeypatch):
    """A port drawing plain 53-bit uniforms where the spec says fine ones (and one-bit's and
    multi-bit's bits as ``u < p``, no complement branch) fails at least two vectors of each
    kind in ``_FINE_KINDS`` and replays the others; the bits, Laplace's cells and the grid
    samplers' cells slip in both directions, and GRR-FS's keep draw of a sampled feature
    (label RR's two slips are both a flip that the plain port keeps)."""
    from skldp.device import _kinds
    from skldp.device._random import node_uniforms
    monkeypatch.setattr(_kinds, "node_uniforms_fine", node_uniforms)
    monkeypatch.setattr(_kinds, "node_bernoulli_fine", lambda seed, keys, n, stream, p, _:
                        node_uniforms(seed, keys, n, stream) < p)
    slips = {name: [] for name in _FINE_KINDS}
    for name in _FINE_KINDS:
        cases = _vectors(name)
        for case in cases:
            plain = encode(case["spec"], case["input"], seed=int(case["seed"], 16),
                           key=int(case["key"], 16))
            if plain != case["report"]:
                slips[name].append((case, plain))
        assert 2 <= len(slips[name]) < len(cases), name
    # bits: a 1 only the fine uniform gives, a 0 only its complement (or its rounding) gives
    for name in ("OneBitMechanism", "MultiBitMechanism", "SetValuedMechanism"):
        assert {c["report"]["b"] for c, _ in slips[name] if "b" in c["report"]} == \
            {"00", "80"}, name
    assert sum("v" in c["report"] for c, _ in slips["SetValuedMechanism"]) == 2   # GRR
    # label RR: the fine uniform flips the label where a plain one keeps it
    assert all(c["report"]["y"] != c["input"] == plain["y"]
               for c, plain in slips["LabelRandomizedResponse"])
    # Laplace: the fine tail of -log(u) goes further, in the first draw and in the second
    assert {np.sign(c["report"]["c"][0] - plain["c"][0])
            for c, plain in slips["LaplaceMechanism"]} == {-1, 1}

    def in_band(case, cell):   # the band's cells start at the value's lattice index
        p = plan(read_spec(case["spec"]))
        unit = (p.prepare(case["input"])[0, 0] - p.lo[0]) / (p.hi[0] - p.lo[0])
        return abs(cell - unit * p.grid.n_steps) <= p.grid.n_band + 1

    # GRR-FS: a feature kept only with the fine uniform, and one flipped only with it
    kept = set()
    for c, plain in slips["GRRFSMechanism"]:
        (j,) = np.flatnonzero(np.array(c["report"]["c"]) != plain["c"])
        kept.add(c["report"]["c"][j] == c["input"][j])
    assert kept == {True, False}
    # grid samplers: the outside piece only with the fine uniform, and the band only with it
    for name in ("PiecewiseMechanism", "HDSMechanism"):
        assert {(in_band(c, c["report"]["c"][0]), in_band(c, plain["c"][0]))
                for c, plain in slips[name]} == {(True, False), (False, True)}, name


def _hashing_cases():
    return [c for path in sorted(VECTORS.glob("*.json"))
            for c in json.loads(path.read_text())["cases"] if c["spec"]["device_steps"]]


@pytest.mark.filterwarnings("ignore:.*outside the collection's public domain")
def test_hashing_vectors_ship_their_map_and_catch_a_port_that_slips(monkeypatch):
    """The vectors with a FeatureHashing step replay with the map their spec ships (the
    device never draws one: numpy's PCG64 is not needed), cover a negative sign, two
    columns summed into one and a clipped sum, and a port that forgets the signs or the
    clip fails some of them."""
    from skldp.device import _steps
    cases = _hashing_cases()
    assert {c["spec"]["kind"].rsplit(".", 1)[-1] for c in cases} >= {"HDSMechanism",
                                                                     "LaplaceMechanism"}
    negative = collide = clipped = False
    for c in cases:
        (step,) = c["spec"]["device_steps"]
        cols, signs = step["public_state"]["columns"], step["public_state"]["signs"]
        nz = [j for j, x in enumerate(c["input"]) if x is not None and x != 0]
        negative |= any(signs[j] == -1 for j in nz)
        collide |= len({cols[j] for j in nz}) < len(nz)
        sums = [sum(c["input"][j] * signs[j] for j in nz if cols[j] == k)
                for k in range(step["params"]["n_components"])]
        clipped |= max(map(abs, sums)) > step["params"]["clip"]
    assert negative and collide and clipped

    def no_pcg64(*args):
        raise AssertionError("a device drew the hashing map")

    def replays():
        return [encode(c["spec"], c["input"], seed=int(c["seed"], 16),
                       key=int(c["key"], 16)) == c["report"] for c in cases]

    monkeypatch.setattr(_steps, "feature_hashing_map", no_pcg64)
    assert all(replays())
    hash_rows = _steps.hash_rows
    for slip in (lambda X, b, s, n, clip: hash_rows(X, b, np.abs(s), n, clip),
                 lambda X, b, s, n, clip: hash_rows(X, b, s, n, np.inf)):
        monkeypatch.setattr(_steps, "hash_rows", slip)
        assert not all(replays())


def test_vectors_cover_ids_and_inputs_outside_the_domain():
    edges = _vectors("EdgeRR")
    assert any(isinstance(v, str) for c in edges for v in c["directory"])
    assert any({type(v) for v in c["directory"]} == {int, str} for c in edges)
    labels = _vectors("LabelRandomizedResponse")
    assert any(c["input"] not in c["spec"]["public_state"]["classes"] for c in labels)
    assert any(None in c["input"] for c in _vectors("OneBitMechanism"))
    grrfs = _vectors("GRRFSMechanism")
    assert any(v in (c["spec"]["params"]["bin_edges"] or {}).get(str(j), [])
               for c in grrfs for j, v in enumerate(c["input"]))


_BLOCKER = """
import sys
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sklearn", "scipy", "torch", "joblib", "pandas"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, _Blocker())
"""


def test_encoder_runs_without_sklearn_scipy_torch(tmp_path):
    """Import the encoder, replay every vector and answer as a device with those libraries
    made unimportable (a device's environment: numpy and the standard library)."""
    script = _BLOCKER + f"""
import json, pathlib
import skldp.device as dev
heavy = [m for m in sys.modules if m.split(".")[0] in ("sklearn", "scipy", "torch", "joblib")]
assert not heavy, heavy
n = 0
for path in sorted(pathlib.Path({str(VECTORS)!r}).glob("*.json")):
    for case in json.loads(path.read_text())["cases"]:
        extra = {{k: case[k] for k in ("user", "directory") if k in case}}
        got = dev.encode(case["spec"], case["input"], seed=int(case["seed"], 16),
                         key=int(case["key"], 16), **extra)
        assert got == case["report"], (path.name, got, case["report"])
        record = dev.Device(user=extra.get("user", 7)).answer(case["spec"], case["input"],
                                                               directory=extra.get("directory"))
        dev.plan(dev.read_spec(case["spec"])).check(record["report"])
        n += 1
assert not [m for m in sys.modules if m.split(".")[0] in ("sklearn", "scipy", "torch")]
print("replayed", n)
"""
    env = dict(os.environ, PYTHONPATH=str(Path(skldp.__file__).parents[1]))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "replayed" in out.stdout


# ----------------------------------------------------- the server's simulation is the device
def _server_and_device(mech, X, fit_X=None):
    """Reports of the server's mechanism, and the device encoder's decoded with it, for every
    user drawn from (collection seed, report key)."""
    n = X.shape[0]
    G = GraphData(X, node_ids=np.arange(100, 100 + n))
    mech.fit(G)
    server = mech.transform(G)
    server = server.features if isinstance(server, GraphData) else server
    server = server.toarray() if sp.issparse(server) else np.asarray(server)
    spec = mech.collection_
    Xd = mech._device_input(G.features)
    rkeys = report_keys(G.node_keys, feature_digests(Xd))
    p = plan(read_spec(spec.to_dict()))
    rows = [p.check(encode(spec, X[i], seed=mech.seed_, key=int(rkeys[i]))) for i in range(n)]
    batch = {k: np.stack([r[k] for r in rows]) for k in rows[0]}
    device = mech._decode(batch)
    device = device.toarray() if sp.issparse(device) else np.asarray(device)
    return server, device


@pytest.mark.parametrize("mech,binary", [
    (HDSMechanism(1.0, k=3, feature_range=(0, 1), random_state=1), False),
    (HDSMechanism(3.0, k=9, feature_range=(-1, 1), random_state=2), False),
    (OneBitMechanism(1.0, feature_range=(0, 1), random_state=3), False),
    (MultiBitMechanism(2.0, m=3, feature_range=(0, 1), random_state=4), False),
    (PiecewiseMechanism(2.0, k=2, feature_range=(0, 1), random_state=5), False),
    (PiecewiseMechanism(4.0, k=12, feature_range=(0, 1), random_state=5), False),
    (LaplaceMechanism(3.0, feature_range=(0, 1), random_state=6), False),
    (SetValuedMechanism(1.0, ell=2, oracle="grr", random_state=7), True),
    (SetValuedMechanism(1.0, ell=1, oracle="oue", random_state=8), True),
])
def test_server_simulation_is_the_device_program(mech, binary):
    rng = np.random.default_rng(0)
    X = (rng.random((30, 12)) < 0.3).astype(float) if binary else rng.uniform(-0.2, 1.2,
                                                                             (30, 12))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # clipping warnings
        server, device = _server_and_device(mech, X)
    np.testing.assert_array_equal(server, device)


def test_grrfs_and_labels_and_edges_are_the_device_program():
    rng = np.random.default_rng(1)
    sizes = np.array([2, 3, 5, 4])
    X = np.stack([rng.integers(0, c, 25) for c in sizes], axis=1).astype(float)
    server, device = _server_and_device(GRRFSMechanism(1.0, m=2, domain_sizes=sizes,
                                                       random_state=0), X)
    np.testing.assert_array_equal(server, device)
    # labels
    G = GraphData(np.zeros((25, 1)), node_ids=np.arange(25) * 7)
    rr = LabelRandomizedResponse(1.0, classes=[0, 1, 2, 3], random_state=0).fit()
    y = rng.integers(0, 4, 25)
    sent = rr.randomize(y, G)
    rkeys = report_keys(G.node_keys, label_digests(y))
    dev = [encode(rr.collection_, int(y[i]), seed=rr.seed_, key=int(rkeys[i]))["y"]
           for i in range(25)]
    np.testing.assert_array_equal(sent, dev)
    # edges: each user's randomized list, named by position in the key-sorted directory
    n = 30
    A = sp.random(n, n, density=0.15, random_state=2, format="csr")
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    ids = rng.permutation(n) * 11 + 4
    G = GraphData(np.zeros((n, 1)), A, node_ids=ids)
    mech = EdgeRR(1.0, symmetrize="directed", random_state=3).fit(G)
    R = sp.csr_matrix(mech.transform(G).adjacency)
    rkeys = report_keys(G.node_keys, list_digests(sp.csr_matrix(A), G.node_keys))
    by_key = np.argsort(ids_to_keys(ids), kind="stable")
    for i in range(n):
        nbrs = ids[A.indices[A.indptr[i]:A.indptr[i + 1]]].tolist()
        rep = encode(mech.collection_, nbrs, seed=mech.seed_, key=int(rkeys[i]),
                     user=int(ids[i]), directory=ids.tolist())
        np.testing.assert_array_equal(np.sort(by_key[rep["l"]]), R.indices[R.indptr[i]:
                                                                           R.indptr[i + 1]])


def test_collection_spec_of_a_seeded_mechanism_needs_simulation():
    mech = HDSMechanism(1.0, feature_range=(0, 1), random_state=0)
    with pytest.raises(ValueError, match="simulation=True"):
        collection_spec(mech, n_features=4)
    spec = collection_spec(mech, n_features=4, simulation=True)
    assert "random_state" not in spec.params and "seed" not in spec.to_json()

