"""Evaluation metrics for private graph learning (estimation error of aggregations)."""

from ._estimation_error import aggregation_error, aggregation_mae, mae_by_degree

__all__ = ["aggregation_error", "aggregation_mae", "mae_by_degree"]
