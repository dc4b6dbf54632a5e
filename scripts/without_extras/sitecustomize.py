"""Hide the optional packages of the ``test`` extra, as if they were not installed.

Put this folder first on ``PYTHONPATH`` and Python imports this module at start-up
(every pytest worker and subprocess too): importing a hidden package raises
``ModuleNotFoundError``, ``importlib.util.find_spec`` returns ``None`` for it, and it never
enters ``sys.modules``. The suite must pass so (the tests that need a package skip)::

    PYTHONPATH=scripts/without_extras python -m pytest -q
"""
import importlib.util
import sys

_BLOCKED = {"pandas", "pymetis", "dp_accounting", "numpydoc", "matplotlib", "tqdm", "dask",
            "distributed", "ray", "pyarrow"}


class _Hide:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
        return None


sys.meta_path.insert(0, _Hide)
_find_spec = importlib.util.find_spec


def _hidden_find_spec(name, package=None):
    if name.split(".")[0] in _BLOCKED:
        return None
    return _find_spec(name, package)


importlib.util.find_spec = _hidden_find_spec
