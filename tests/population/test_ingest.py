"""Reports from real devices: validation with counts, the server's graph, pipelines that start
from collected reports (no second perturbation) and the budget the ledger states."""

import io
import json
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.pipeline import Pipeline

from skldp import GraphData
from skldp.accounting import privacy_report
from skldp.baselines import CorrectAndSmooth, LabelPropagationClassifier
from skldp.device import Device, Directory
from skldp.mechanisms import (
    EdgeRR,
    HDSMechanism,
    LabelRandomizedResponse,
    MultiBitMechanism,
    OneBitMechanism,
)
from skldp.models import LPGNNClassifier, MLPHead
from skldp.population import (
    BudgetExceededError,
    collection_spec,
    mechanism_from_spec,
    read_reports,
    received_graph,
    write_reports,
)
from skldp.propagation import PPRPropagation


def _fleet(G, y, labelled, *, eps_x=2.0, eps_y=2.0, eps_e=4.0):
    """Specs for features, labels and edges; every user's device answers them."""
    X = G.features.toarray() if hasattr(G.features, "toarray") else G.features
    A, ids = G.adjacency, G.node_ids
    sx = collection_spec(HDSMechanism(eps_x, k=3, feature_range=(0, 1)), n_features=X.shape[1])
    sy = collection_spec(LabelRandomizedResponse(eps_y, classes=[0, 1, 2]))
    se = collection_spec(EdgeRR(eps_e, symmetrize="and"), node_ids=ids)
    directory = Directory(ids.tolist())
    rx, ry, re_ = [], [], []
    for i, u in enumerate(ids.tolist()):
        dev = Device(user=u)
        rx.append(dev.answer(sx, X[i]))
        re_.append(dev.answer(se, ids[A.indices[A.indptr[i]:A.indptr[i + 1]]].tolist(),
                              directory=directory))
        if labelled[i]:
            ry.append(dev.answer(sy, int(y[i])))
    return (sx, rx), (sy, ry), (se, re_)


def _sbm(n=90, d=8, seed=1):
    """A 3-block graph with 0/1 features that carry the class."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    P = np.where(y[:, None] == y[None, :], 0.2, 0.01)
    A = np.triu(rng.random((n, n)) < P, 1)
    A = sp.csr_matrix((A | A.T).astype(float))
    X = rng.random((n, d)) < 0.2 + 0.5 * (np.arange(d)[None, :] % 3 == y[:, None])
    return GraphData(X.astype(float), A, node_ids=np.arange(n) * 3 + 1), y


@pytest.fixture(scope="module")
def fleet():
    G, y = _sbm()
    labelled = np.zeros(len(y), dtype=bool)
    labelled[::2] = True
    return G, y, labelled, _fleet(G, y, labelled)


def test_refused_reports_are_counted(fleet):
    G, y, labelled, ((sx, rx), _, _) = fleet
    bad = [dict(rx[0], report={"i": [0, 1], "c": [5, 6]}),            # wrong length
           dict(rx[1], report={"i": [2, 1, 0], "c": [5, 6, 7]}),      # indices not increasing
           dict(rx[2], report={"i": [0, 1, 99], "c": [5, 6, 7]}),     # index out of range
           dict(rx[3], report={"i": [0, 1, 2], "c": [5, 6, 2**40]}),  # cell out of range
           dict(rx[4], collection="ffffffffffffffff"),
           dict(rx[5], user=10_000),
           {"user": 1, "report": {}},
           rx[6], rx[6]]
    lines = [json.dumps(r) for r in rx[7:] + bad] + ["not json {"]
    got = read_reports(io.StringIO("\n".join(lines)), sx, users=G.node_ids.tolist())
    assert len(got) == len(rx) - 7 + 1
    assert got.refused == {"malformed": 3, "out of domain": 3, "other collection": 1,
                           "unknown user": 1, "duplicate": 1}
    assert got.n_refused == 9 and "duplicate" in repr(got)
    # the first answer of a user is kept
    first = dict(rx[7], report=dict(rx[7]["report"]))
    second = dict(rx[7], report={"i": [0, 1, 2], "c": [1, 2, 3]})
    got = read_reports([first, second], sx, users=G.node_ids.tolist())
    np.testing.assert_array_equal(got.reports["c"][0], first["report"]["c"])


def test_file_formats_round_trip(fleet, tmp_path):
    G, y, labelled, ((sx, rx), (sy, ry), (se, re_)) = fleet
    ids = G.node_ids.tolist()
    write_reports(re_, tmp_path / "edges.jsonl")
    a = read_reports(str(tmp_path / "edges.jsonl"), se, users=ids)
    with pytest.raises(ValueError, match="read with users="):
        read_reports(str(tmp_path / "edges.jsonl"), se)   # no directory: no list can be checked
    pytest.importorskip("pyarrow")
    for name in ("edges.parquet", "edges.arrow"):
        write_reports(re_, str(tmp_path / name))
        b = read_reports(str(tmp_path / name), se, users=ids)
        assert b.users == a.users and b.refused == a.refused
        for la, lb in zip(a.reports["l"], b.reports["l"], strict=True):
            np.testing.assert_array_equal(la, lb)


def test_a_user_who_sent_another_answer_is_charged_for_it(fleet):
    # a device that forgot its answer sends a fresh one: refused as a duplicate, but sent,
    # so it costs the budget again; a resend of the same report costs nothing
    G, y, labelled, ((sx, rx), _, _) = fleet
    ids = G.node_ids.tolist()
    other = dict(rx[0], report=rx[1]["report"])        # user 0's second, different answer
    got = read_reports(rx + [other, dict(rx[2])], sx, users=ids)
    assert got.refused == {"duplicate": 2} and got.again == {rx[0]["user"]: 1}
    Gr, _ = received_graph(features=got, node_ids=ids)
    spent = Gr.ledger.spent(Gr.node_keys)
    assert spent[0] == 2 * sx.epsilon and np.all(spent[1:] == sx.epsilon)
    assert privacy_report(Gr).local_epsilon == 2 * sx.epsilon


def test_every_bad_record_is_counted_not_fatal(fleet, tmp_path):
    G, y, labelled, ((sx, rx), _, _) = fleet
    ids = G.node_ids.tolist()
    good = [json.dumps(r).encode() for r in rx[:3]]
    path = tmp_path / "reports.jsonl"
    path.write_bytes(b"\n".join(good[:2] + [b"\xff\xfe not UTF-8"] + good[2:]) + b"\n")
    got = read_reports(str(path), sx, users=ids)
    assert len(got) == 3 and got.refused == {"malformed": 1}
    got = read_reports([None, [1, 2], 5] + rx[:3], sx, users=ids)   # neither records nor lines
    assert len(got) == 3 and got.refused == {"malformed": 3}
    with pytest.raises(ValueError, match="format must be"):
        read_reports(str(path), sx, format="csv")


@pytest.mark.parametrize("ext", ["parquet", "arrow"])
def test_columnar_files_keep_each_record_as_sent(fleet, tmp_path, ext):
    # a column store has a column per field of any record: one odd record must not
    # make the others malformed, nor lose its own extra field
    pytest.importorskip("pyarrow")
    G, y, labelled, ((sx, rx), _, _) = fleet
    ids = G.node_ids.tolist()
    rx = rx[:5]
    cases = {"extra report field": [dict(r) for r in rx[:4]]
             + [dict(rx[4], report=dict(rx[4]["report"], z=1))],
             "extra field first": [dict(rx[0], sent_at=1)] + rx[1:],
             "extra field last": rx[:4] + [dict(rx[4], sent_at=1)]}
    for name, records in cases.items():
        write_reports(records, tmp_path / f"r.{ext}")
        got = read_reports(str(tmp_path / f"r.{ext}"), sx, users=ids)
        assert len(got) == 4 and got.refused == {"malformed": 1}, name
    # the format named, whatever the file's name
    write_reports(rx, tmp_path / f"r.{ext}")
    (tmp_path / "r.bin").write_bytes((tmp_path / f"r.{ext}").read_bytes())
    assert len(read_reports(str(tmp_path / "r.bin"), sx, users=ids, format=ext)) == 5


def test_received_graph_trains_pipelines_and_states_the_budget(fleet):
    G, y, labelled, ((sx, rx), (sy, ry), (se, re_)) = fleet
    ids = G.node_ids.tolist()
    Gr, yr = received_graph(features=read_reports(rx, sx, users=ids),
                            labels=read_reports(ry, sy, users=ids),
                            edges=read_reports(re_, se, users=ids), node_ids=ids)
    assert Gr.shape == G.shape and Gr.is_symmetric() and not Gr.population.simulated
    np.testing.assert_array_equal(yr >= 0, labelled)
    lab = yr >= 0
    # the mechanism step reads the reports (no second perturbation) and says so
    pipe = Pipeline([("hds", HDSMechanism(2.0, k=3, feature_range=(0, 1))),
                     ("ppr", PPRPropagation()), ("clf", MLPHead(epochs=5, random_state=0))])
    pipe.fit(Gr[lab], yr[lab])
    hds = pipe.named_steps["hds"]
    assert hds.collected_ and hds.collection_.id == sx.id and not hasattr(hds, "seed_")
    Z = hds.transform(Gr)
    assert Z.features is Gr.features
    pipe.predict(Gr[~lab])
    report = privacy_report(pipe)
    assert report.epsilon_for("features") == 2.0 and report.epsilon_for("labels") == 2.0
    assert report.epsilon_for("edges") == 4.0 and report.local_epsilon == 8.0
    assert report.spends[0].step == "hds"
    # without the mechanism step the GraphData's ledger states the same
    assert privacy_report(Gr).local_epsilon == 8.0
    # reading again costs nothing; asking the devices again is refused
    pipe.fit(Gr[lab], yr[lab])
    assert privacy_report(Gr).local_epsilon == 8.0


def test_mismatching_or_new_perturbation_is_refused(fleet):
    G, y, labelled, ((sx, rx), (sy, ry), _) = fleet
    ids = G.node_ids.tolist()
    Gr, yr = received_graph(features=read_reports(rx, sx, users=ids),
                            labels=read_reports(ry, sy, users=ids))
    with pytest.raises(ValueError, match="other parameters: eps=1.0"):
        HDSMechanism(1.0, k=3, feature_range=(0, 1)).fit(Gr)
    with pytest.raises(ValueError, match="another mechanism's"):
        MultiBitMechanism(2.0, m=3, feature_range=(0, 1)).fit(Gr)
    with pytest.raises(ValueError, match="devices are real"):
        LabelRandomizedResponse(1.0, classes=[0, 1, 2]).fit().randomize(yr[yr >= 0],
                                                                        Gr[yr >= 0])
    lab = yr >= 0
    with pytest.raises(ValueError, match="not those these users sent"):
        LabelRandomizedResponse.from_spec(sy).fit().randomize(y[lab], Gr[lab])
    with pytest.raises(ValueError, match="sent no label"):
        LabelRandomizedResponse.from_spec(sy).fit().randomize(np.zeros(3, int), Gr[~lab][:3])


def test_collected_labels_feed_the_label_models(fleet):
    G, y, labelled, ((sx, rx), (sy, ry), (se, re_)) = fleet
    ids = G.node_ids.tolist()
    Gr, yr = received_graph(features=read_reports(rx, sx, users=ids),
                            labels=read_reports(ry, sy, users=ids),
                            edges=read_reports(re_, se, users=ids), node_ids=ids)
    lab = yr >= 0
    lp = LabelPropagationClassifier(label_mechanism=LabelRandomizedResponse.from_spec(sy))
    lp.fit(Gr[lab], yr[lab])
    assert lp.label_mechanism_.collected_ and lp.label_mechanism_.collection_.id == sy.id
    assert lp.predict(Gr[~lab]).shape == ((~lab).sum(),)
    cs = CorrectAndSmooth(LabelPropagationClassifier(
        label_mechanism=LabelRandomizedResponse.from_spec(sy))).fit(Gr[lab], yr[lab])
    assert cs.predict(Gr[~lab]).shape == ((~lab).sum(),)
    lpgnn = LPGNNClassifier(eps_y=2.0, classes=[0, 1, 2], epochs=3, random_state=0)
    lpgnn.fit(Gr[lab], yr[lab])
    assert lpgnn.label_mechanism_.collection_.id == sy.id
    np.testing.assert_allclose(lpgnn.transition_matrix_,
                               mechanism_from_spec(sy).transition_matrix_)
    assert privacy_report(lpgnn).epsilon_for("labels") == 2.0
    # the edge step over received edges passes them on
    e = EdgeRR(4.0, symmetrize="and").fit(Gr)
    assert e.collected_ and e.transform(Gr).adjacency is Gr.adjacency


def test_received_labels_feed_rgnn(fleet):
    pytest.importorskip("pymetis")
    from skldp.models import RGNNClassifier
    G, y, labelled, (_, (sy, ry), (se, re_)) = fleet
    ids = G.node_ids.tolist()
    Gr, yr = received_graph(labels=read_reports(ry, sy, users=ids),
                            edges=read_reports(re_, se, users=ids), node_ids=ids)
    lab = yr >= 0
    Gx = Gr.with_features(G.features)   # features that are not private in this test
    rg = RGNNClassifier(eps_y=2.0, classes=[0, 1, 2], n_clusters=4, epochs=3, random_state=0)
    rg.fit(Gx[lab], yr[lab])
    assert rg.label_mechanism_.collection_.id == sy.id


def test_budget_cap_on_receive(fleet):
    G, y, labelled, ((sx, rx), (sy, ry), _) = fleet
    ids = G.node_ids.tolist()
    with pytest.raises(BudgetExceededError):
        received_graph(features=read_reports(rx, sx, users=ids),
                       labels=read_reports(ry, sy, users=ids), budget=3.0)


def test_a_population_counts_what_several_calls_received(fleet):
    # features and labels ingested in two calls: each graph's ledger alone says 2, the
    # users spent 4; charged into one population, the cap sees both
    G, y, labelled, ((sx, rx), (sy, ry), _) = fleet
    ids = G.node_ids.tolist()
    feats, labs = read_reports(rx, sx, users=ids), read_reports(ry, sy, users=ids)
    first, _ = received_graph(features=feats, node_ids=ids, budget=3.0)
    alone, _ = received_graph(labels=labs, node_ids=ids, budget=3.0)
    assert privacy_report(alone).local_epsilon == 2.0
    with pytest.raises(BudgetExceededError, match="the ledger charges them.*not used"):
        received_graph(labels=labs, node_ids=ids, population=first)
    # refused, but received: charged (the ledger records what users sent)
    assert privacy_report(first).local_epsilon == 4.0
    with pytest.raises(ValueError, match="already has a budget of 3"):
        received_graph(labels=labs, node_ids=ids, population=first, budget=5.0)
    first.population.set_budget(5.0)
    both, _ = received_graph(labels=labs, node_ids=ids, population=first.population)
    assert privacy_report(both).local_epsilon == 4.0       # the retry: not charged twice
    with pytest.raises(ValueError, match="simulates its devices"):
        received_graph(labels=labs, node_ids=ids, population=G)


def test_a_later_batch_of_new_answers_is_charged():
    # the same users answer the same collection again in a later batch (a second device,
    # a replay under a new answer id, a forgery): charged as in one batch, resends free
    sy = collection_spec(LabelRandomizedResponse(2.0, classes=[0, 1, 2]))
    ids = ["a", "b", "c", "d"]
    batch1 = [Device(user=u).answer(sy, 0) for u in ids]
    batch2 = [Device(user=u).answer(sy, 1) for u in ids]
    G1, _ = received_graph(labels=read_reports(batch1, sy, users=ids), node_ids=ids)
    G2, _ = received_graph(labels=read_reports(batch1, sy, users=ids), node_ids=ids,
                           population=G1)
    assert privacy_report(G2).local_epsilon == 2.0          # a resend is free
    G3, y3 = received_graph(labels=read_reports(batch2[:2], sy, users=ids), node_ids=ids,
                            population=pickle.loads(pickle.dumps(G1.population)))
    assert privacy_report(G3).local_epsilon == 4.0          # the new answers are charged
    assert y3[:2].tolist() == [r["report"]["y"] for r in batch2[:2]]   # the new reports
    G4, _ = received_graph(labels=read_reports(batch2[2:] + batch2[2:], sy, users=ids),
                           node_ids=ids, population=G3)
    assert privacy_report(G4).local_epsilon == 4.0          # ("c", "d") charged 4 once
    # one further answer per user in two batches: two charges, not one spec seen twice
    extra = [Device(user=u).answer(sy, 2) for u in ids]
    more = [Device(user=u).answer(sy, 2) for u in ids]
    G5, _ = received_graph(labels=read_reports(batch1 + extra, sy, users=ids), node_ids=ids)
    G6, _ = received_graph(labels=read_reports(batch1 + more, sy, users=ids), node_ids=ids,
                           population=G5, budget=None)
    assert privacy_report(G6).local_epsilon == 6.0
    with pytest.raises(BudgetExceededError, match="earlier batches"):
        G5.population.set_budget(6.0)
        received_graph(labels=read_reports(batch2, sy, users=ids), node_ids=ids,
                       population=G5)


def test_further_answers_across_batches_copies_and_retries():
    import copy

    from skldp.population import Population
    from skldp.population._ingest import ReceivedReports
    sy = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    ids = ["a", "b", "c", "d"]

    def batch(v):
        return [Device(user=u).answer(sy, v) for u in ids]

    def spent(G):
        return G.ledger.spent(G.node_keys).tolist()
    # a copy of the population and the original each charge a later batch: two charges
    G1, _ = received_graph(labels=read_reports(batch(0), sy, users=ids), node_ids=ids)
    copied = copy.deepcopy(G1.population)
    received_graph(labels=read_reports(batch(1), sy, users=ids), node_ids=ids,
                   population=copied)
    G3, y3 = received_graph(labels=read_reports(batch(2), sy, users=ids), node_ids=ids,
                            population=G1)
    assert spent(G3) == [3.0] * 4
    # a label model fits on the latest graph (the further answers' charges are no
    # collection of their own)
    ring = sp.csr_matrix(np.roll(np.eye(4), 1, axis=1) + np.roll(np.eye(4), -1, axis=1))
    LabelPropagationClassifier(label_mechanism=LabelRandomizedResponse.from_spec(sy)).fit(
        G3.with_adjacency(ring, source="public"), y3)
    # refused part-way (b's 2 further answers), then retried with a larger cap: a's one
    # further answer is charged once
    recs = batch(0) + [Device(user="a").answer(sy, 1)] + \
        [Device(user="b").answer(sy, v) for v in (1, 2)]
    got = read_reports(recs, sy, users=ids)
    P = Population(2.5, simulated=False)
    with pytest.raises(BudgetExceededError):
        received_graph(labels=got, node_ids=ids, population=P)
    P.set_budget(10.0)
    G, _ = received_graph(labels=got, node_ids=ids, population=P)
    assert spent(G) == [2.0, 3.0, 1.0, 1.0]
    # reports without their answers' digests (built by hand): again still counts
    hand = ReceivedReports(got.spec, got.users, got.reports, got.refused, got.again)
    G, _ = received_graph(labels=hand, node_ids=ids)
    assert spent(G) == [2.0, 3.0, 1.0, 1.0]


def test_missing_feature_reports(fleet):
    G, y, labelled, ((sx, rx), _, _) = fleet
    ids = G.node_ids.tolist()
    part = read_reports(rx[:-5], sx, users=ids)
    with pytest.raises(ValueError, match="5 of the 90 users sent no report"):
        received_graph(features=part, node_ids=ids)
    Gr, _ = received_graph(features=part, node_ids=ids, missing_features="zero")
    assert Gr.features[-5:].sum() == 0


@pytest.mark.parametrize("mech", [OneBitMechanism(2.0, feature_range=(0, 1)),
                                  MultiBitMechanism(2.0, m=2, feature_range=(0, 1))])
def test_decoded_reports_are_the_unbiased_estimates(mech):
    """Ingestion decodes bits into the mechanism's rectified output: unbiased over users."""
    spec = collection_spec(mech, n_features=3)
    x = np.array([0.2, 0.5, 0.9])
    recs = [Device(user=i).answer(spec, x) for i in range(3000)]
    Gr, _ = received_graph(features=read_reports(recs, spec, users=range(3000)))
    Z = Gr.features.toarray() if hasattr(Gr.features, "toarray") else Gr.features
    se = Z.std(axis=0) / np.sqrt(len(Z))
    assert np.all(np.abs(Z.mean(axis=0) - x) < 4.5 * se)


def test_a_step_fitted_on_one_collection_refuses_the_reports_of_another(fleet):
    # the same parameters, another collection (another id): the fitted step holds no
    # secret, so it cannot stand for the other collection's mechanism
    G, y, labelled, ((sx, rx), _, _) = fleet
    ids = G.node_ids.tolist()
    Gr, _ = received_graph(features=read_reports(rx, sx, users=ids), node_ids=ids)
    (sx2, rx2), _, _ = _fleet(G, y, labelled)
    assert sx2.id != sx.id and sx2.params == sx.params
    Gr2, _ = received_graph(features=read_reports(rx2, sx2, users=ids), node_ids=ids,
                            population=Gr)   # the same users, asked again
    hds = HDSMechanism(2.0, k=3, feature_range=(0, 1)).fit(Gr)
    assert hds.transform(Gr).features is Gr.features
    with pytest.raises(ValueError, match=f"fitted on the reports of collection {sx.id}"):
        hds.transform(Gr2)
    with pytest.raises(ValueError, match=f"fitted on the reports of collection {sx.id}"):
        # the same users' raw features: no reports at all
        hds.transform(GraphData(G.features, G.adjacency, node_ids=ids, population=Gr))
