"""Node keys given by the caller are integers (a signed one read as its 64 bits), or refused.

Before, ``LabelRandomizedResponse.randomize(y, [0.2, 0.5, 0.9])`` cast the keys to
uint64: the three users became the one key 0, got one shared noisy label, and the
ledger held one user. Every public function taking node keys shares one check.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp.device import encode
from skldp.device._random import check_node_keys
from skldp.mechanisms import HDSMechanism, LabelRandomizedResponse
from skldp.population import (
    collection_spec,
    default_population,
    list_digests,
    report_keys,
)

NOT_KEYS = [
    np.array([0.2, 0.5, 0.9]),      # truncated to one key 0
    [0.2, 0.5, 0.9],
    np.array([1.0, 2.0, 3.0]),      # a float cannot hold a 64-bit key
    np.array([np.nan, 1.0, 2.0]),
    [2**64, 0, 1],
    np.array([True, False, True]),
    np.array(["0", "1", "2"]),
]


@pytest.mark.parametrize("keys", NOT_KEYS)
def test_label_randomization_refuses_keys_that_are_no_integers(keys):
    rr = LabelRandomizedResponse(0.5, classes=list(range(10)), random_state=0).fit()
    with pytest.raises(ValueError, match="keys must be the users' node keys"):
        rr.randomize(np.array([3, 3, 3]), keys)
    users, _ = default_population().ledger.per_user("labels")
    assert len(users) == 0   # nobody charged


@pytest.mark.parametrize("keys", [np.arange(3), [0, 1, 2], np.arange(3, dtype=np.uint8),
                                  np.array([0, 1, 2], dtype=object)])
def test_integer_keys_of_any_type_are_the_same_users(keys):
    expected = np.arange(3, dtype=np.uint64)
    np.testing.assert_array_equal(check_node_keys(keys), expected)
    assert check_node_keys(keys).dtype == np.uint64
    big = [2**64 - 1, 1]   # (a list numpy would read as floats)
    np.testing.assert_array_equal(check_node_keys(big), np.array(big, dtype=np.uint64))
    rr = LabelRandomizedResponse(0.5, classes=list(range(10)), random_state=0).fit()
    y = np.array([3, 3, 3])
    np.testing.assert_array_equal(rr.randomize(y, keys), rr.randomize(y, expected))


def test_other_public_functions_taking_node_keys_refuse_them():
    keys = np.array([0.2, 0.5, 0.9])
    with pytest.raises(ValueError, match="node keys"):
        report_keys(keys, np.zeros(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="node keys"):
        list_digests(sp.csr_matrix((3, 3)), keys)
    with pytest.raises(ValueError, match="node keys"):
        default_population().ledger.spent(keys)
    spec = collection_spec(HDSMechanism(1.0, k=2, feature_range=(0, 1)), n_features=6)
    with pytest.raises(ValueError, match="key must be"):
        encode(spec, np.linspace(0, 1, 6), seed=5, key=9.5)
    with pytest.raises(ValueError, match="key must be"):
        encode(spec, np.linspace(0, 1, 6), seed=5, key=2**64)


def test_keys_stored_as_signed_integers_are_read_as_their_64_bits():
    # node keys are uint64 hashes; a table's int64 column stores about half as negatives
    keys = np.array([2**64 - 1, 2**63, 5], dtype=np.uint64)
    stored = keys.view(np.int64)
    assert stored.min() < 0
    np.testing.assert_array_equal(check_node_keys(stored), keys)
    np.testing.assert_array_equal(check_node_keys(np.zeros(0)), np.zeros(0, np.uint64))
    rr = LabelRandomizedResponse(0.5, classes=list(range(10)), random_state=0).fit()
    y = np.array([3, 3, 3])
    np.testing.assert_array_equal(rr.randomize(y, stored), rr.randomize(y, keys))
