"""Privacy accounting: budgets per user, composition, RDP."""

from ._budget_split import BudgetSplit, recommend_budget_split
from ._dpsgd import calibrate_dpsgd_noise_multiplier, compute_dpsgd_epsilon, dpsgd_rdp
from ._rdp import (
                   DEFAULT_ORDERS,
                   calibrate_noise_multiplier,
                   compute_epsilon,
                   dpgnn_rdp,
                   rdp_to_epsilon,
)
from ._report import PrivacyReport, PrivacySpend, privacy_report

__all__ = ["PrivacyReport", "PrivacySpend", "privacy_report", "DEFAULT_ORDERS",
           "calibrate_noise_multiplier", "compute_epsilon", "dpgnn_rdp", "rdp_to_epsilon",
           "dpsgd_rdp", "compute_dpsgd_epsilon", "calibrate_dpsgd_noise_multiplier",
           "BudgetSplit", "recommend_budget_split"]
