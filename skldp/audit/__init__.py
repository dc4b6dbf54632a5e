"""Empirical privacy audits: lower bounds on the privacy loss of local DP mechanisms.

An audit runs a mechanism many times on two fixed inputs and bounds, with a
chosen confidence, how much better than chance one report tells them apart
(:func:`audit_pair`, :func:`audit_mechanism`). A bound above the claimed
``epsilon_`` disproves the claim; a bound below it proves nothing. Several
collections run on the same users are audited jointly
(:func:`audit_collections`): collections that share random numbers leak more
than the sum of their budgets. :func:`audit_ledger` audits a whole estimator:
everything one user sent while it was fitted, against what its ledger charged.
:func:`check_output_grid` and
:func:`additive_support_check` look for floating-point leaks (Mironov, CCS
2012) that sampling cannot see.
"""

from ._collections import audit_collections, audit_mechanism
from ._floating import GridCheckResult, additive_support_check, check_output_grid
from ._ledger import audit_ledger
from ._stats import AuditEvent, AuditResult, audit_pair, clopper_pearson

__all__ = ["AuditEvent", "AuditResult", "GridCheckResult", "additive_support_check",
           "audit_collections", "audit_ledger", "audit_mechanism", "audit_pair",
           "check_output_grid",
           "clopper_pearson"]
