"""Former home of the paper studies, which moved to the repository's ``studies/`` folder.

Importing a name from here still works for one release, with a ``FutureWarning``,
when run from the root of a clone (where ``studies`` is importable).
"""

import warnings

from ._cli import NO_STUDIES, paper_studies


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    studies = paper_studies()
    if studies is None:
        raise ImportError(f"skldp.experiments.studies.{name}: {NO_STUDIES}.")
    warnings.warn("skldp.experiments.studies is deprecated and will be removed in the next "
                  "release: the paper studies are the repository's studies/ package "
                  f"(import studies; studies.{name}).", FutureWarning, stacklevel=2)
    if hasattr(studies, name):
        return getattr(studies, name)
    for module in studies.list_studies():   # the former re-exports, e.g. privge_study
        if name == f"{module}_study":
            return getattr(__import__(f"studies.{module}", fromlist=[name]), name)
    raise AttributeError(f"module 'skldp.experiments.studies' has no attribute {name!r}")
