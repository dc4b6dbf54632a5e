"""Reconstruction of features and labels from local DP reports."""

from ._frequency import FrequencyReconstructor, mean_propagation_matrix
from ._labels import (
                      grr_transition_matrix,
                      project_simplex,
                      reconstruct_labels,
                      unbiased_label_distribution,
)
from ._llp import cluster_label_proportions, llp_kl_loss, metis_clusters

__all__ = ["FrequencyReconstructor", "mean_propagation_matrix", "grr_transition_matrix",
           "project_simplex", "reconstruct_labels", "unbiased_label_distribution",
           "cluster_label_proportions", "llp_kl_loss", "metis_clusters"]
