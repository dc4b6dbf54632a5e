"""read_spec refuses a spec whose fields are not of their type even when its id is the digest
of its content: a boolean where a number is expected (JSON's true is not 1), and a model that
is not "local", "central" or "clear" (which would skip the checks of a local spec)."""

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


def test_the_id_helper_reproduces_a_spec_id(spec):
    assert _with_id(spec.to_dict())["id"] == spec.id


def test_a_boolean_epsilon_is_refused(spec):
    d = spec.to_dict()
    d["epsilon"] = True        # 1.0 would be this spec: the id matches as read
    with pytest.raises(SpecError, match="'epsilon' must be a number"):
        read_spec(d)
    with pytest.raises(SpecError, match="'epsilon' must be a number"):
        read_spec(json.dumps(d))


def test_a_model_outside_the_three_is_refused_with_a_matching_id(spec):
    d = _with_id(dict(spec.to_dict(), model="trusted"))
    with pytest.raises(SpecError, match="model must be 'local', 'central' or 'clear'"):
        read_spec(d)


# a version is a JSON integer: 4.0 equals 4 in Python and true equals 1, but neither
# is a version, even with an id that is the digest of the content as written
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
