"""Privacy accounting: budgets per user, composition, RDP."""

from ._report import PrivacyReport, PrivacySpend, privacy_report

__all__ = ["PrivacyReport", "PrivacySpend", "privacy_report"]
