"""Registered studies: ``python -m skldp reproduce <name>``."""

from ._budget_split import budget_split_study
from ._dpgnn import dpgnn_study
from ._label_scarce import label_scarce_study
from ._link_prediction import link_prediction_study
from ._lpgnn import lpgnn_study
from ._lpgnn_mae import lpgnn_mae_study
from ._planetoid import planetoid_study
from ._privge import privge_study
from ._rgnn import rgnn_study
from ._solitude import solitude_study

__all__ = ["get_study", "list_studies", "privge_study", "rgnn_study", "solitude_study",
           "link_prediction_study", "dpgnn_study", "lpgnn_study",
           "lpgnn_mae_study", "planetoid_study", "label_scarce_study", "budget_split_study"]

_STUDIES = {"privge": privge_study, "rgnn": rgnn_study, "solitude": solitude_study,
            "link_prediction": link_prediction_study, "dpgnn": dpgnn_study,
            "lpgnn": lpgnn_study, "lpgnn_mae": lpgnn_mae_study, "planetoid": planetoid_study,
            "label_scarce": label_scarce_study, "budget_split": budget_split_study}


def list_studies():
    """Names of the registered studies.

    Returns
    -------
    names : list of str
    """
    return sorted(_STUDIES)


def get_study(name, **kwargs):
    """The registered study ``name``.

    Parameters
    ----------
    name : str
        A name of :func:`list_studies`.
    **kwargs : dict
        Passed to the study's factory (e.g. ``datasets``, ``seeds``).

    Returns
    -------
    study : Study
    """
    if name not in _STUDIES:
        raise ValueError(f"unknown study {name!r}; registered studies: {list_studies()}.")
    return _STUDIES[name](**kwargs)
