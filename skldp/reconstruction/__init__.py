"""Reconstruction of features and labels from local DP reports."""

__all__ = []
