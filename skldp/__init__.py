"""skldp: differential privacy for learning on graphs, with the scikit-learn API."""

import importlib as _importlib

__version__ = "0.1.0"

# The package's names are imported when first used (PEP 562), so that importing a
# light subpackage (``skldp.device``, the numpy-only encoder that runs on users'
# devices) does not import scikit-learn, scipy or torch.
_LAZY = {
    "GraphData": "._graph_data",
    "GraphClassifierMixin": ".base",
    "GraphTransformerMixin": ".base",
    "LDPMechanism": ".base",
    "NodeWise": ".base",
    "ToPandas": ".base",
    "InvalidParameterError": ".exceptions",
    "PrivacyBudgetError": ".exceptions",
    "PrivacyLeakWarning": ".exceptions",
}

__all__ = ["GraphData", "GraphClassifierMixin", "GraphTransformerMixin", "InvalidParameterError",
           "LDPMechanism", "NodeWise", "PrivacyBudgetError", "PrivacyLeakWarning", "ToPandas",
           "__version__"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'skldp' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():   # the public names and the subpackages imported so far
    return sorted(set(__all__) | {n for n in globals() if not n.startswith("_")})
