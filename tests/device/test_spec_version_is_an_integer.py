"""A spec's version is a JSON integer: ``4.0`` equals 4 in Python and ``true`` equals 1, but
neither is a version, even with an id that is the digest of the content as written."""

import hashlib
import json

import pytest

from skldp.device import CollectionSpec, SpecError, read_spec
from skldp.mechanisms import LabelRandomizedResponse
from skldp.population import collection_spec


def _with_id(d):
    body = {k: v for k, v in d.items() if k != "id"}
    text = json.dumps(body, sort_keys=True).encode()
    return dict(d, id=hashlib.blake2b(text, digest_size=8, person=b"skldp-spec-id").hexdigest())


@pytest.fixture
def spec():
    return collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))


@pytest.mark.parametrize("version", [4.0, 5.0, 3.0, True, "4", None, [4]])
def test_a_version_that_is_no_integer_is_refused(spec, version):
    d = _with_id(dict(spec.to_dict(), version=version))
    with pytest.raises(SpecError, match="version .* is not supported"):
        read_spec(d)
    with pytest.raises(SpecError, match="version .* is not supported"):
        read_spec(json.dumps(d))
    with pytest.raises(SpecError, match="version .* is not supported"):   # the ledger's reader
        CollectionSpec.from_dict(d, check_kind=False)


@pytest.mark.parametrize("version", [3, 4, 5])
def test_an_integer_version_is_read(spec, version):
    d = _with_id(dict(spec.to_dict(), version=version))
    assert read_spec(json.dumps(d)).version == version
