"""A hash of estimators' parameters and state in which the user's functions count by what
they compute, not by their name."""

import sys
import sysconfig
import types

from joblib.hashing import NumpyHasher

__all__ = ["content_hash"]

_LIBRARY_PATHS = tuple(p for p in {sysconfig.get_paths().get(k) for k in
                                   ("stdlib", "platstdlib", "purelib", "platlib")} if p)


def _named(obj):
    """Whether ``obj`` (a function or class) comes from the standard library, an installed
    package or skldp itself: its name identifies it (its code changes with a version)."""
    name = getattr(obj, "__module__", None) or ""
    if name == "skldp" or name.startswith("skldp."):
        return True
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) or ""
    return bool(path) and (path.startswith(_LIBRARY_PATHS) or "site-packages" in path)


def _const(c):
    if isinstance(c, types.CodeType):
        return _code_parts(c)
    if isinstance(c, frozenset):   # (a set literal: pickled in the hash seed's order)
        return ("frozenset", sorted(map(repr, c)))
    return c


def _code_parts(code):
    return (code.co_code, code.co_names, code.co_varnames, code.co_argcount,
            code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
            tuple(_const(c) for c in code.co_consts))


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


class _ContentHasher(NumpyHasher):
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
        if isinstance(obj, type) and not _named(obj):
            attrs = tuple(sorted((k, _attribute(v)) for k, v in vars(obj).items()
                                 if k not in ("__dict__", "__weakref__", "__doc__")))
            bases = tuple(b for b in obj.__bases__ if b is not object)
            return _Class, (obj.__qualname__, bases,
                            content_hash(attrs, self._inside))
        return NotImplemented


def _attribute(v):
    """A class attribute as hashed: a static or class method, a property, by its functions."""
    if isinstance(v, (staticmethod, classmethod)):
        return (type(v).__name__, v.__func__)
    if isinstance(v, property):
        return ("property", v.fget, v.fset, v.fdel)
    return v


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
