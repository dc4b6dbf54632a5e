"""A label mechanism over labels real devices sent (``LabelRandomizedResponse.from_spec``)
reads the label each user sent in any batch of the collection: its latest report, or one
a later batch replaced (each was sent, and charged). A label no batch of that user holds
is refused, and nothing is charged for it."""

import numpy as np
import pytest

from skldp.accounting import privacy_report
from skldp.device import Device
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec, read_reports, received_graph

N = 40
IDS = [f"u{i}" for i in range(N)]
Y = np.arange(N) % 3
EPS = 0.5


def _spec():
    return collection_spec(LabelRandomizedResponse(EPS, classes=[0, 1, 2]))


def _batch(spec, users=IDS, population=None):
    """The devices of ``users`` answer ``spec`` (fresh devices: new reports); the labels
    received, -1 for the users not in this batch."""
    recs = [Device(u).answer(spec, int(Y[IDS.index(u)])) for u in users]
    return received_graph(labels=read_reports(recs, spec, users=users), node_ids=IDS,
                          population=population)


def _read(spec, G, y, rows):
    """The labels a mechanism built from ``spec`` reads as those the users ``rows`` sent."""
    mech = LabelRandomizedResponse.from_spec(spec).fit()
    return mech, mech.randomize(np.asarray(y)[rows], G[rows])


def _two_batches():
    spec = _spec()
    G1, y1 = _batch(spec)
    G, y2 = _batch(spec, population=G1)   # every device answers again (lost state)
    changed = np.flatnonzero(np.asarray(y1) != np.asarray(y2))
    assert len(changed) >= 2   # (fresh devices: about 2/3 of the reports change)
    return spec, G, np.asarray(y1), np.asarray(y2), changed


def test_from_spec_reads_an_earlier_batchs_labels():
    # the latest batch's labels only were read as sent: batch 1's, each sent and charged,
    # were refused
    spec, G, y1, y2, changed = _two_batches()
    rows = np.random.default_rng(0).permutation(N)   # y[train]: reordered
    for y in (y1, y2):
        mech, read = _read(spec, G, y, rows)
        np.testing.assert_array_equal(read, y[rows])   # the labels given, not the latest
        assert mech.collected_ and read.collection == spec.id == mech.collection_.id
    # each user's label from either batch: each one it sent
    mixed = np.where(np.arange(N) % 2 == 0, y1, y2)
    np.testing.assert_array_equal(_read(spec, G, mixed, rows)[1], mixed[rows])
    # nothing more is charged: the two answers of every user
    assert privacy_report(G).epsilon_for("labels") == 2 * EPS


def test_labels_no_batch_sent_are_refused():
    spec, G, y1, y2, changed = _two_batches()
    rows = np.arange(N)

    def refused(y):
        with pytest.raises(ValueError, match="not those these users sent"):
            _read(spec, G, y, rows)
        assert privacy_report(G).epsilon_for("labels") == 2 * EPS

    i = changed[0]
    neither = y1.copy()
    neither[i] = 3 - y1[i] - y2[i]   # the class neither of its reports holds
    refused(neither)
    # another user's report: one this user never sent
    same = np.flatnonzero(y1 == y2)
    j = next(j for j in range(N) if y1[j] != y1[same[0]])
    swapped = y1.copy()
    swapped[same[0]], swapped[j] = y1[j], y1[same[0]]
    refused(swapped)


def test_a_mix_of_batches_with_a_label_one_user_never_sent_is_refused():
    # batch 2 holds half of the users: the others sent one label (batch 1's)
    spec = _spec()
    G1, y1 = _batch(spec)
    G, y2 = _batch(spec, users=IDS[:N // 2], population=G1)
    y1, y2 = np.asarray(y1), np.asarray(y2)
    mixed = np.where(y2 >= 0, y2, y1)
    rows = np.arange(N)
    np.testing.assert_array_equal(_read(spec, G, mixed, rows)[1], mixed)
    # one user of batch 1 only is given a label of another class
    k = N - 1
    forged = mixed.copy()
    forged[k] = (y1[k] + 1) % 3
    with pytest.raises(ValueError, match="not those these users sent"):
        _read(spec, G, forged, rows)
    # the users who answered twice are charged twice, the others once: no more
    spent = G.ledger.spent(G.node_keys)
    np.testing.assert_array_equal(spent, np.where(y2 >= 0, 2 * EPS, EPS))


def test_an_earlier_batchs_labels_name_their_collection():
    # two collections of the same parameters: the one whose earlier batch holds the labels
    # is read (before, neither held them: "None of the label collections")
    a, b = _spec(), _spec()
    G1, ya1 = _batch(a)
    G2, ya2 = _batch(a, population=G1)
    G, yb = _batch(b, population=G2)
    ya1, ya2, yb = np.asarray(ya1), np.asarray(ya2), np.asarray(yb)
    rows = np.arange(N)
    for spec in (a, b):   # (the collection is found from the labels, from either spec)
        mech, read = _read(spec, G, ya1, rows)
        assert mech.collection_.id == a.id and read.collection == a.id
    assert _read(a, G, yb, rows)[0].collection_.id == b.id
    # a's labels but one user's b label that no batch of a holds: no collection holds them
    u = np.flatnonzero((yb != ya1) & (yb != ya2))[0]
    mixed = ya1.copy()
    mixed[u] = yb[u]
    assert np.any((mixed != yb)[rows != u])   # (b does not hold them either)
    with pytest.raises(ValueError, match="None of the label collections"):
        _read(a, G, mixed, rows)
    assert privacy_report(G).epsilon_for("labels") == 3 * EPS
