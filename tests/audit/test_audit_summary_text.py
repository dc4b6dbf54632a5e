"""AuditResult.summary(): the printed lower bound is never above the bound computed."""

import re

import pytest

from skldp.audit import AuditResult


def _res(lower, claimed=None, confidence=0.95, point=1.0):
    return AuditResult(lower, point, None, (100, 100), confidence, "values", (),
                       epsilon_claimed=claimed)


def _printed_bound(text):
    return float(re.match(r"epsilon >= (\S+) at", text).group(1))


@pytest.mark.parametrize("lower", [0.99996, 0.123456, 2.99999999, 1234567.0, 0.3, 0.0])
def test_printed_lower_bound_is_rounded_down(lower):
    # "epsilon >= 1" was printed for a bound of 0.99996 (rounded to the nearest)
    assert _printed_bound(_res(lower).summary()) <= lower


def test_a_violation_is_visible_in_the_printed_numbers():
    # "epsilon >= 1 ... (claimed 1, VIOLATED)": the two numbers printed were equal
    text = _res(1.00003, claimed=1.0).summary()
    assert "VIOLATED" in text
    m = re.search(r"epsilon >= (\S+) at .*\(claimed ([^,)]+), VIOLATED", text)
    assert float(m.group(1)) > float(m.group(2)), text


def test_printed_claim_is_not_below_the_claim():
    text = _res(0.5, claimed=1.00004).summary()
    assert float(re.search(r"claimed ([^,)]+)\)", text).group(1)) >= 1.00004, text


def test_printed_confidence_is_rounded_down():
    # a family-wise 0.99999 printed as "100% confidence"
    text = _res(0.5, confidence=0.99999).summary()
    assert "100%" not in text and "99.99% confidence" in text
    assert "at 95% confidence" in _res(0.5).summary()


def test_epsilon_point_is_minus_inf_when_the_numerator_never_saw_the_event():
    # an event chosen on the selection split and absent from the evaluation split:
    # epsilon_point is ln(0) = -inf (it was, undocumented) and the bound is 0
    import numpy as np

    from skldp.audit import audit_pair
    rng = np.random.default_rng(0)
    res = audit_pair(rng.integers(0, 100, size=6), rng.integers(0, 100, size=6),
                     events="cells", random_state=0)
    assert res.counts[0] == 0 and res.epsilon_point == -np.inf and res.epsilon_lower == 0.0
    doc = " ".join(AuditResult.__doc__.split())
    assert "``-inf`` when the event was never seen for the numerator input" in doc
    assert "point estimate -inf" in res.summary()


@pytest.mark.parametrize("confidence", [95, 0.0, 1.0, float("nan"), "0.95", True])
def test_audit_result_refuses_a_confidence_outside_0_1(confidence):
    # AuditResult(confidence=95) printed "at 9500% confidence"
    with pytest.raises(ValueError, match="confidence"):
        _res(0.5, confidence=confidence)


def test_event_text_tells_apart_floats_that_round_alike():
    # a low-bit leak: x0 reports 0.1 or the next float, x1 always 0.1; the event was
    # printed as "(0.1)", the value x1 always reports, and an interval as "[1, 1)"
    import numpy as np

    from skldp.audit import AuditEvent, audit_pair
    up = float(np.nextafter(0.1, 1.0))
    r0 = np.where(np.random.default_rng(0).random(2000) < 0.5, 0.1, up)
    res = audit_pair(r0, np.full(2000, 0.1))
    assert res.event.members == ((float(up),),)
    assert f"E = {{({up!r})}}" in str(res.event) and repr(up) in res.summary()
    cell = AuditEvent((0, 1), (((1.0, float(np.nextafter(1.0, 2.0))),),))
    assert "[1, 1.0000000000000002)" in str(cell)
    assert "E = {(0.5), ([0.25, 1e+06))}" in str(AuditEvent((0, 1), ((0.5,), ((0.25, 1e6),))))
    # a value that is no short decimal keeps its short form
    assert str(AuditEvent((0, 1), ((-0.5819767068693263,), ((-1.2140572547827244, 0.3),)))) \
        == "P(E|x0)/P(E|x1), E = {(-0.581977), ([-1.214, 0.3))}"
