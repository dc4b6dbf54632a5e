"""The device package's errors (a module of its own: every other module may import it)."""

__all__ = ["SpecError"]


class SpecError(ValueError):
    """A collection spec that cannot be read: wrong version, unknown kind, missing bound."""
