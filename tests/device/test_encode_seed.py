"""``encode``'s seed is a 63-bit integer, as its key is a 64-bit one: anything else is refused.

Before, a float or text seed failed deep in the sampler with numpy's "unsupported operand
type(s) for &", ``True`` was read as the seed 1, and seeds past 63 bits or negative were cut
to their low 64 bits (2**64 drew the reports of the seed 0), so that a port's bad seed gave
reports that matched another seed's test vectors.
"""

import numpy as np
import pytest

from skldp.device import encode
from skldp.mechanisms import OneBitMechanism
from skldp.population import collection_spec

SPEC = collection_spec(OneBitMechanism(1.0, feature_range=(0, 1)), n_features=8)
ROW = np.linspace(0, 1, 8)


@pytest.mark.parametrize("seed", [1.5, 1.0, np.float64(2.0), "5", None, True, np.bool_(True),
                                  [1]])
def test_a_seed_that_is_no_integer_is_refused(seed):
    with pytest.raises(TypeError, match="seed must be an integer"):
        encode(SPEC, ROW, seed=seed, key=7)


@pytest.mark.parametrize("seed", [-1, 2**63, 2**64, 2**70, np.uint64(2**63)])
def test_a_seed_outside_63_bits_is_refused(seed):
    with pytest.raises(ValueError, match=r"seed must be in 0\.\.2\*\*63 - 1"):
        encode(SPEC, ROW, seed=seed, key=7)


@pytest.mark.parametrize("seed", [0, 1, 2**63 - 1, np.int64(12), np.uint64(12)])
def test_integer_seeds_of_63_bits_are_read(seed):
    assert encode(SPEC, ROW, seed=seed, key=7) == encode(SPEC, ROW, seed=int(seed), key=7)
