"""Warnings and errors specific to skldp."""

from sklearn.utils._param_validation import (
    InvalidParameterError as _SklearnInvalidParameterError,
)

__all__ = ["PrivacyLeakWarning", "PrivacyBudgetError", "InvalidParameterError"]


class PrivacyLeakWarning(UserWarning):
    """A parameter was taken from the private data itself (e.g. feature bounds).

    Deriving public parameters such as ``feature_range`` from the data that the
    mechanism is meant to protect leaks information about it and voids the
    stated guarantee. Pass the bounds explicitly to silence this warning. The
    same convention is used by IBM's diffprivlib.
    """


class PrivacyBudgetError(ValueError):
    """A requested privacy guarantee cannot be met with the given settings."""


# scikit-learn's own class, not a look-alike: the declared ``_parameter_constraints``
# (checked by ``sklearn.base._fit_context`` at fit) raise it, and so do skldp's
# hand-written checks, so that one ``except InvalidParameterError`` catches both. It
# subclasses both ``ValueError`` and ``TypeError``, so callers may catch either.
InvalidParameterError = _SklearnInvalidParameterError
