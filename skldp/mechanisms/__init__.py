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
from ._hashing import FeatureHashing
from ._label_rr import LabelRandomizedResponse
from ._laplace import LaplaceMechanism
from ._multi_bit import MultiBitMechanism
from ._one_bit import OneBitMechanism
from ._piecewise import PiecewiseMechanism
from ._set_valued import SetValuedMechanism, frequency_oracle_probabilities, set_valued_variance
from ._square_wave import HDSMechanism, hds_estimator_variance, hds_optimal_k

__all__ = ["EdgeRR", "LabelRandomizedResponse",
           "LaplaceMechanism", "MultiBitMechanism", "OneBitMechanism", "PiecewiseMechanism",
           "HDSMechanism", "hds_estimator_variance", "hds_optimal_k", "FeatureHashing",
           "SetValuedMechanism", "frequency_oracle_probabilities", "set_valued_variance",
           "GRRFSMechanism", "FeatureGrouper", "discretize", "group_features", "grrfs_epsilon",
           "grrfs_paper_epsilon", "quantile_bin_edges"]
