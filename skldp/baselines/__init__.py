"""Feature-free baselines and hybrid graph pipelines.

A private-feature model is worth its budget only if it beats what the graph
alone gives. This package provides that reference as ordinary estimators on
:class:`~skldp.GraphData` views: label propagation
(:class:`LabelPropagationClassifier`, optionally on randomized labels),
structural node features (:class:`StructuralFeatures`), the Correct and Smooth
post-processing of any classifier (:class:`CorrectAndSmooth`), and a
:class:`GraphFeatureUnion` that concatenates structural and private-feature
branches. None of them reads the node features except through a private
branch, so they spend no budget beyond the mechanisms they contain.
"""

from ._correct_smooth import CorrectAndSmooth
from ._label_propagation import LabelPropagationClassifier
from ._structural import StructuralFeatures
from ._union import GraphFeatureUnion

__all__ = ["CorrectAndSmooth", "GraphFeatureUnion", "LabelPropagationClassifier",
           "StructuralFeatures"]
