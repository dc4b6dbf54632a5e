"""The server accepts a report exactly when each field is inside its public domain: the
last value of a domain is accepted, the first past it is refused as out of domain, and so
are repeated indices and set padding bits."""

import warnings

import numpy as np
import pytest

from skldp.device import Directory, plan
from skldp.mechanisms import (
    EdgeRR,
    GRRFSMechanism,
    HDSMechanism,
    LabelRandomizedResponse,
    OneBitMechanism,
)
from skldp.population import collection_spec, read_reports

USERS = ["a", "b", "c", "d"]


def _refusals(spec, reports, users=USERS):
    """``(accepted, refused)`` of one record per report, each from its own user."""
    records = [{"collection": spec.id, "user": u, "report": r}
               for u, r in zip(users, reports, strict=False)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = read_reports(records, spec, users=users)
    return len(got), dict(got.refused)


def test_label_report_domain_ends_at_the_last_class():
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[10, 20, 30]))
    assert _refusals(spec, [{"y": 0}, {"y": 2}, {"y": 3}, {"y": -1}]) == \
        (2, {"out of domain": 2})


def test_hds_cells_and_indices_end_at_their_domains():
    spec = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=5)
    n_cells = plan(spec).grid.n_cells
    good = {"i": [0, 4], "c": [0, n_cells - 1]}
    past_cell = {"i": [0, 4], "c": [0, n_cells]}
    past_index = {"i": [0, 5], "c": [0, 0]}
    repeated = {"i": [3, 3], "c": [0, 0]}
    assert _refusals(spec, [good, past_cell, past_index, repeated]) == \
        (1, {"out of domain": 3})


def test_one_bit_padding_bits_must_be_zero():
    spec = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=3)
    # 3 bits in one byte, most significant first: 0xe0 = 111 + padding 00000
    assert _refusals(spec, [{"b": "e0"}, {"b": "20"}, {"b": "e1"}, {"b": "f0"}]) == \
        (2, {"out of domain": 2})


def test_grrfs_code_equal_to_the_domain_size_is_outside_it():
    spec = collection_spec(GRRFSMechanism(1.0, m=1, domain_sizes=[3, 2]), n_features=2)
    p = plan(spec)
    assert _refusals(spec, [{"c": [2, 1]}, {"c": [3, 1]}, {"c": [2, 2]}]) == \
        (1, {"out of domain": 2})
    # a device replaces such a code by a random one of its domain (never refuses)
    codes, n = p.prepare_on_device(np.array([[3.0, 1.0], [2.0, 2.0]]),
                                   np.random.default_rng(0))
    assert n == 2 and codes[0, 0] in (0, 1, 2) and codes[1, 1] in (0, 1)
    with pytest.raises(ValueError, match="integer codes"):
        p.prepare(np.array([[3.0, 1.0]]))


def test_an_adjacency_list_names_positions_of_the_directory_only():
    ids = list(range(5))
    spec = collection_spec(EdgeRR(1.0), node_ids=np.asarray(ids))
    keys = Directory(ids).keys
    own = [int(np.searchsorted(keys, Directory([u]).keys[0])) for u in ids]
    last = 4 if own[0] != 4 else 3                      # the last position, not user 0's own
    assert _refusals(spec, [{"l": [last]}, {"l": [5]}], users=ids) == \
        (1, {"out of domain": 1})


def test_a_label_report_that_is_a_bool_or_a_float_is_malformed():
    # JSON true is not the class at position 1, nor 1.0: an "int" field takes integers only
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[10, 20, 30]))
    assert _refusals(spec, [{"y": True}, {"y": 1.0}, {"y": False}, {"y": 1}]) == \
        (1, {"malformed": 3})
