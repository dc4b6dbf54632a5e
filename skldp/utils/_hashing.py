"""A hash of estimators' parameters and state in which the user's functions count by what
they compute, not by their name."""

import sys
import sysconfig
import types

from joblib.hashing import Hasher

__all__ = ["content_hash"]

_LIBRARY_PATHS = tuple(p for p in {sysconfig.get_paths().get(k) for k in
                                   ("stdlib", "platstdlib", "purelib", "platlib")} if p)


def _named(obj):
    """Whether ``obj`` (a function or class) comes from the standard library or an
    installed package: its name identifies it (its code changes with a version only)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    path = getattr(module, "__file__", None) or ""
    return bool(path) and (path.startswith(_LIBRARY_PATHS) or "site-packages" in path)


def _code_parts(code):
    return (code.co_code, code.co_names, tuple(
        _code_parts(c) if isinstance(c, types.CodeType) else c for c in code.co_consts))


def _global_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


class _Function:
    """Stands for a function in the hash: its code, defaults, closure and the globals it
    reads (functions among them by their content, modules by name)."""


class _Class:
    """Stands for a class of the user's in the hash: its name and attributes."""


class _ContentHasher(Hasher):
    """joblib's hasher, where a function or class of the user's (not of an installed
    package) is hashed by its content: joblib's names it by its module and name, so one
    redefined under its name (a notebook, an edited module) would hash the same."""

    def __init__(self):
        super().__init__()
        self._inside = set()   # functions being hashed: a recursive reference by name

    def save(self, obj):
        if isinstance(obj, types.MethodType) and not _named(obj.__func__):
            obj = (obj.__func__, obj.__self__)   # (joblib's: the method's name only)
        super().save(obj)

    def reducer_override(self, obj):
        if isinstance(obj, types.FunctionType) and not _named(obj):
            if id(obj) in self._inside:
                return _Function, (obj.__module__, obj.__qualname__)
            self._inside.add(id(obj))
            try:
                scope = obj.__globals__
                reads = tuple(sorted(
                    (name, ("module", scope[name].__name__)
                     if isinstance(scope[name], types.ModuleType) else scope[name])
                    for name in _global_names(obj.__code__) if name in scope))
                cells = tuple(c.cell_contents for c in (obj.__closure__ or ()))
                parts = (obj.__module__, obj.__qualname__, _code_parts(obj.__code__),
                         obj.__defaults__, obj.__kwdefaults__, cells, reads)
                # hashed here, while the function is marked as being hashed
                return _Function, (content_hash(parts, self._inside),)
            finally:
                self._inside.discard(id(obj))
        if isinstance(obj, type) and obj.__module__ == "__main__":
            attrs = tuple(sorted((k, v) for k, v in vars(obj).items()
                                 if isinstance(v, (types.FunctionType, int, float, str, bool,
                                                   tuple, type(None)))))
            return _Class, (obj.__qualname__, content_hash(attrs, self._inside))
        return NotImplemented


def content_hash(obj, _inside=None):
    """A hexadecimal digest of ``obj``, as ``joblib.hash``, with the user's functions and
    classes hashed by their content.

    Raises
    ------
    pickle.PicklingError, TypeError
        If ``obj`` holds something that cannot be hashed (a lock in a closure).
    """
    hasher = _ContentHasher()
    if _inside is not None:
        hasher._inside = _inside
    return hasher.hash(obj)
