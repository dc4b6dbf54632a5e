"""Local DP mechanisms for features, labels and edges (one private module per family)."""

from ._edge_rr import EdgeRR
from ._grr import (
                   FeatureGrouper,
                   GRRFSMechanism,
                   discretize,
                   group_features,
                   grrfs_epsilon,
                   grrfs_paper_epsilon,
                   quantile_bin_edges,
)
from ._label_rr import LabelRandomizedResponse
from ._laplace import LaplaceMechanism
from ._multi_bit import MultiBitMechanism
from ._one_bit import OneBitMechanism
from ._piecewise import PiecewiseMechanism
from ._square_wave import HDSMechanism

__all__ = ["EdgeRR", "LabelRandomizedResponse",
           "LaplaceMechanism", "MultiBitMechanism", "OneBitMechanism", "PiecewiseMechanism",
           "HDSMechanism",
           "GRRFSMechanism", "FeatureGrouper", "discretize", "group_features", "grrfs_epsilon",
           "grrfs_paper_epsilon", "quantile_bin_edges"]
