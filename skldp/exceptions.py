"""Warnings and errors specific to skldp."""

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


class InvalidParameterError(ValueError, TypeError):
    """A hyper-parameter has the wrong type or is out of its range.

    A subclass of both ``ValueError`` and ``TypeError`` (as scikit-learn's own
    ``InvalidParameterError``), so callers may catch either.
    """
