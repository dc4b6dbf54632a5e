"""skldp: differential privacy for learning on graphs, with the scikit-learn API."""

from ._graph_data import GraphData
from .base import GraphClassifierMixin, GraphTransformerMixin, LDPMechanism, NodeWise
from .exceptions import InvalidParameterError, PrivacyBudgetError, PrivacyLeakWarning

__version__ = "0.1.0"

__all__ = ["GraphData", "GraphClassifierMixin", "GraphTransformerMixin", "InvalidParameterError",
           "LDPMechanism", "NodeWise", "PrivacyBudgetError", "PrivacyLeakWarning", "__version__"]
