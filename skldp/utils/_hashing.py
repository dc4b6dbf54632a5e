"""A hash of estimators' parameters and state in which the user's functions count by what
they compute, not by their name."""

import ast
import functools
import inspect
import sys
import sysconfig
import textwrap
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
    if name == "__main__":   # (a script, a notebook, python -c: the user's)
        return False
    path = getattr(sys.modules.get(name), "__file__", None)
    if not path:   # builtins, frozen modules
        return name in sys.builtin_module_names or name in sys.modules
    return path.startswith(_LIBRARY_PATHS) or "site-packages" in path


def _code_parts(code):
    # (a set literal among the constants is a frozenset: the hasher sorts it)
    return (code.co_code, code.co_names, code.co_varnames, code.co_argcount,
            code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
            tuple(_code_parts(c) if isinstance(c, types.CodeType) else c
                  for c in code.co_consts))


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
    redefined under its name (a notebook, an edited module) would hash the same.

    A class whose content cannot be hashed (a lock among its attributes, an ABC's
    registry) is hashed by its name, as joblib does; a function or class met again while
    it is being hashed (recursion) by its name; each is hashed once per call.
    """

    def __init__(self, shared=None, by_source=False):
        super().__init__()
        # (objects being hashed, digests made): shared with the nested hashes of one call
        self._inside, self._done = shared if shared is not None else (set(), {})
        self._by_source = by_source

    def save(self, obj):
        if isinstance(obj, types.MethodType) and not _named(obj.__func__):
            obj = (obj.__func__, obj.__self__)   # (joblib's: the method's name only)
        elif isinstance(obj, frozenset):   # (pickled in the hash seed's order)
            obj = ("frozenset", sorted(map(repr, obj)))
        super().save(obj)

    def reducer_override(self, obj):
        if isinstance(obj, functools._lru_cache_wrapper):   # (pickled by its name alone)
            obj = obj.__wrapped__
        if isinstance(obj, types.FunctionType) and not _named(obj):
            parts = functools.partial(_function_parts, by_source=self._by_source)
            return _Function, self._digest(obj, parts, strict=True)
        if isinstance(obj, type) and not _named(obj):
            return _Class, self._digest(obj, _class_parts, strict=False)
        return NotImplemented

    def _digest(self, obj, parts, strict):
        """``(module, name, digest of parts(obj))``; by name alone on recursion, or (unless
        ``strict``) when the parts cannot be hashed."""
        key = id(obj)
        name = (obj.__module__, obj.__qualname__)
        if key in self._inside:
            return name
        if key not in self._done:
            self._inside.add(key)
            try:
                nested = _ContentHasher((self._inside, self._done), self._by_source)
                self._done[key] = name + (nested.hash(parts(obj)),)
            except Exception:
                if strict:
                    raise
                self._done[key] = name
            finally:
                self._inside.discard(key)
        return self._done[key]


def _function_parts(f, by_source=False):
    """What a function computes: its code (or its source text), defaults, closure and the
    globals it reads (modules by name)."""
    scope = f.__globals__
    reads = tuple(sorted(
        (name, ("module", scope[name].__name__)
         if isinstance(scope[name], types.ModuleType) else scope[name])
        for name in _global_names(f.__code__) if name in scope))
    cells = tuple(c.cell_contents for c in (f.__closure__ or ()))
    code = _source(f) if by_source else None
    if code is None:
        code = _code_parts(f.__code__)
    return (code, f.__defaults__, f.__kwdefaults__, cells, reads)


def _source(f):
    """``("source", text)`` of a function, or None where Python has no source for it
    (``python -c``, a REPL). Bytecode changes with Python's minor version; the text
    does not. Its comments, docstrings and layout do not count (``ast.unparse``), so
    that editing them leaves a kept digest as it is."""
    try:
        text = textwrap.dedent(inspect.getsource(f))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:   # (a lambda's lines, cut out of a statement: as written)
        return ("source", text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ("source", ast.unparse(tree))


def _class_parts(cls):
    attrs = tuple(sorted((k, _attribute(v)) for k, v in vars(cls).items()
                         if k not in ("__dict__", "__weakref__", "__doc__", "_abc_impl",
                                      # (Python 3.13: where it is written, not what it does)
                                      "__firstlineno__", "__static_attributes__")))
    return tuple(b for b in cls.__bases__ if b is not object), attrs


def _attribute(v):
    """A class attribute as hashed: a static or class method, a property, by its functions."""
    if isinstance(v, (staticmethod, classmethod)):
        return (type(v).__name__, v.__func__)
    if isinstance(v, property):
        return ("property", v.fget, v.fset, v.fdel)
    return v


def content_hash(obj, by_source=False):
    """A hexadecimal digest of ``obj``, as ``joblib.hash``, with the user's functions and
    classes hashed by their content.

    ``by_source=True`` hashes a function's source text (without its comments, docstrings
    and layout) instead of its bytecode where
    Python has it: a digest that is kept (written to a file) then stays the same under
    another Python version.

    Raises
    ------
    pickle.PicklingError, TypeError
        If ``obj`` holds something that cannot be hashed (a lock in a closure).
    """
    return _ContentHasher(by_source=by_source).hash(obj)
