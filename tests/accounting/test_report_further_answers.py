"""privacy_report's lines for what real devices sent: answers beyond a user's first to a
collection read as further answers to that collection (before: an unrelated collection
with a fresh id, "1 user" at twice the epsilon), and collections received and used
without a mechanism step read as received (before: "another fit on these users")."""

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from skldp.accounting import privacy_report
from skldp.device import CollectionSpec, Device, Directory, SpecError, read_spec
from skldp.mechanisms import EdgeRR, HDSMechanism, LabelRandomizedResponse
from skldp.models import MLPHead
from skldp.population import collection_spec, read_reports, received_graph

N = 12
IDS = [f"user{i}" for i in range(N)]


@pytest.fixture(scope="module")
def received():
    rng = np.random.default_rng(0)
    X = (rng.random((N, 4)) < 0.3).astype(float)
    y = np.arange(N) % 3
    spec_x = collection_spec(HDSMechanism(2.0, k=2, feature_range=(0, 1)), n_features=4)
    spec_y = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    spec_e = collection_spec(EdgeRR(3.0, symmetrize="or"), node_ids=IDS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recs = [Device(user=u).answer(spec_x, X[i]) for i, u in enumerate(IDS)]
        recs.append(Device(user="user0").answer(spec_x, X[0]))   # a device that lost its state
        recs_y = [Device(user=u).answer(spec_y, int(y[i])) for i, u in enumerate(IDS)]
        recs_y += [Device(user="user1").answer(spec_y, int(y[1])) for _ in range(2)]
        directory = Directory(IDS)
        recs_e = [Device(user=u).answer(spec_e, [IDS[(i + 1) % N]], directory=directory)
                  for i, u in enumerate(IDS)]
        G, ys = received_graph(features=read_reports(recs, spec_x, users=IDS),
                               labels=read_reports(recs_y, spec_y, users=IDS),
                               edges=read_reports(recs_e, spec_e, users=IDS), node_ids=IDS)
    return G, ys, spec_x, spec_y, spec_e


def test_the_graph_report_names_further_answers_by_their_collection(received):
    G, _, spec_x, spec_y, _ = received
    rep = privacy_report(G)
    text = str(rep)
    assert (f"  collection {spec_x.id}, further answers: 1 user sent 1 more answer "
            "(HDSMechanism, epsilon=2 each; local DP; protects features)") in text
    assert (f"  collection {spec_y.id}, further answers: 1 user sent 2 more answers "
            "(LabelRandomizedResponse, epsilon=1 each, 2 in all; local DP; protects labels)"
            ) in text
    # the numbers are those of the ledger, as before
    assert rep.local_epsilon == pytest.approx(2 + 2 + 1 + 3)   # user0: features twice
    assert rep.epsilon_for("features") == 4 and rep.epsilon_for("labels") == 3
    (fx,) = [s for s in rep.spends if s.further_answers_to == spec_x.id]
    assert (fx.further_answers, fx.epsilon, fx.n_users) == (1, 2.0, 1) and fx.received


def test_a_pipeline_report_ties_further_answers_to_its_step(received):
    G, ys, spec_x, spec_y, spec_e = received
    pipe = Pipeline([("hds", HDSMechanism(2.0, k=2, feature_range=(0, 1))),
                     ("clf", MLPHead(epochs=1, random_state=0))]).fit(G, ys)
    text = str(privacy_report(pipe))
    assert (f"  hds: further answers to its collection {spec_x.id}: 1 user sent 1 more "
            "answer (HDSMechanism, epsilon=2 each; local DP; protects features)") in text
    # the labels it trained on and the lists the graph was built from: received, no step
    assert f"  received from devices: collection {spec_y.id}: LabelRandomizedResponse" in text
    assert f"  received from devices: collection {spec_e.id}: EdgeRR epsilon=3" in text
    assert (f"  received from devices: collection {spec_y.id}, further answers: 1 user sent "
            "2 more answers") in text
    assert "another fit" not in text


def test_an_older_ledger_reads_its_further_answers_from_the_nonce(received):
    G, _, spec_x, _, _ = received
    ledger = G.ledger
    saved = dict(ledger._local)
    try:
        for key, (spec, answers) in list(ledger._local.items()):
            if spec.further_answers:   # written as before: the count in the nonce only
                c = spec.further_answers["count"]
                old = dataclasses.replace(spec, further_answers=None).with_nonce(
                    f"{spec.nonce.split(' ')[0]} ({c} further answers, 0123456789abcdef)")
                ledger._local[key] = (old, answers)
        text = str(privacy_report(G))
    finally:
        ledger._local.clear()
        ledger._local.update(saved)
    assert f"collection {spec_x.id}, further answers: 1 user sent 1 more answer" in text


def test_the_further_answers_field_is_checked_when_read(received):
    G, _, spec_x, _, _ = received
    (charge,) = [e.spec for e in G.ledger.entries()
                 if (e.spec.further_answers or {}).get("collection") == spec_x.id]
    assert charge.further_answers == {"collection": spec_x.id, "count": 1}
    # (the ledger's reader: a device's read_spec refuses a charge, see tests/device)
    assert CollectionSpec.from_json(charge.to_json(), check_kind=False) == charge
    bad = dataclasses.replace(charge, further_answers={"collection": spec_x.id, "count": 0})
    with pytest.raises(SpecError, match="'further_answers' must be"):
        CollectionSpec.from_json(bad.with_nonce(charge.nonce).to_json(), check_kind=False)
    with pytest.raises(SpecError, match="'further_answers' must be"):
        read_spec(bad.with_nonce(charge.nonce).to_json())
    assert "further_answers" not in spec_x.to_dict()   # collections devices read: as before
