"""The paper studies: ``python -m skldp reproduce <name>`` from the repository's root.

One module per study holds its configuration (``make_study``: a
:class:`skldp.experiments.Study`) and its page (``write_page``: the results
page of the documentation, from the study's runs). The runs themselves are in
``runs/<name>_runs.jsonl``. These modules use skldp's public API only; they
are not part of the installed package.
"""

import importlib
from pathlib import Path

__all__ = ["list_studies", "get_study", "write_page", "RUNS_DIR", "PAGES_DIR"]

RUNS_DIR = Path(__file__).resolve().parent / "runs"
PAGES_DIR = Path(__file__).resolve().parent.parent / "docs" / "results"

# name -> module of this package
_STUDIES = ("budget_split", "dpgnn", "honest_utility", "label_scarce", "link_prediction", "lpgnn",
            "lpgnn_mae", "planetoid", "privge", "rgnn", "solitude")


def _module(name):
    if name not in _STUDIES:
        raise ValueError(f"unknown study {name!r}; registered studies: {list_studies()}.")
    return importlib.import_module(f"{__name__}.{name}")


def list_studies():
    """Names of the registered studies.

    Returns
    -------
    names : list of str
    """
    return sorted(_STUDIES)


def get_study(name, **kwargs):
    """The study ``name``.

    Parameters
    ----------
    name : str
        A name of :func:`list_studies`.
    **kwargs : dict
        Passed to the study's ``make_study`` (e.g. ``datasets``, ``seeds``).

    Returns
    -------
    study : skldp.experiments.Study
    """
    return _module(name).make_study(**kwargs)


def write_page(name, records, pages_dir=PAGES_DIR, runs_file=None, partial=None):
    """Write the results page of study ``name`` (and its figure) from its runs.

    Parameters
    ----------
    name : str
        A name of :func:`list_studies`.
    records : list of dict
        The study's records (its runs file).
    pages_dir : path-like, default=PAGES_DIR
        Folder of the page (the documentation's results folder).
    runs_file : path-like or None, default=None
        The runs file the records were read from, as the page names it
        (default: the repository's, ``studies/runs/<name>_runs.jsonl``).
    partial : tuple of (int, int) or None, default=None
        ``(k, n)`` when only ``k`` of the ``n`` runs of the command that writes
        the page are recorded: the page says so.

    Returns
    -------
    paths : dict of str -> pathlib.Path
        What was written (``"page"``, ``"figure"``).

    Raises
    ------
    ValueError
        No record (the page and figure are left as they are).
    """
    if not records:
        raise ValueError(f"no run of study {name!r} is recorded: its page is not written "
                         "(it would show no result).")
    return _module(name).write_page(records, Path(pages_dir), runs_file=runs_file,
                                    partial=partial)
