"""Progress messages of long fits: ``logging`` records, shown when ``verbose`` asks for them."""

import logging

__all__ = ["verbose_logger"]

_ROOT = "skldp"


def verbose_logger(name):
    """The logger of a fit run with ``verbose > 0`` (INFO records).

    Progress goes through :mod:`logging` (logger ``skldp.<module>``), never
    bare ``print``. When the application has configured no logging at all, a
    stderr handler is added to the ``skldp`` logger (level INFO) so that
    ``verbose=1`` still shows the messages; otherwise the application's
    handlers and levels decide.

    Parameters
    ----------
    name : str
        Logger name (``__name__`` of the calling module).

    Returns
    -------
    logger : logging.Logger
    """
    root = logging.getLogger(_ROOT)
    if not root.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(handler)
        if root.level == logging.NOTSET:
            root.setLevel(logging.INFO)
    return logging.getLogger(name)
