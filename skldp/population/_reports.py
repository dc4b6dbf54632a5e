"""Labels the users sent, marked with the collection that received them (provenance)."""

import numpy as np

__all__ = ["LabelReports", "collection_of"]


class LabelReports(np.ndarray):
    """Labels the users sent in a label collection, marked with its id (provenance).

    What :meth:`LabelRandomizedResponse.randomize
    <skldp.mechanisms.LabelRandomizedResponse.randomize>` and
    :func:`~skldp.population.received_graph` return: a read-only array that a fit
    reads as the labels the users sent, not as clean labels. Indexing
    (``y[train]``), views and pickling keep the mark; a copy or anything computed
    from it (``y + 0``, ``np.array(list(y))``, a NumPy function) is plain labels.

    Parameters
    ----------
    labels : array-like
        The reports, in the collection's label domain. For a collection
        received from real devices a fit checks them against what the users
        sent (other labels are clean labels); for a simulated one they are
        taken at your word.
    collection : str
        The id of the collection (``CollectionSpec.id``).

    Examples
    --------
    >>> import numpy as np
    >>> from skldp import GraphData
    >>> from skldp.mechanisms import LabelRandomizedResponse
    >>> rr = LabelRandomizedResponse(1.0, classes=[0, 1], random_state=0).fit()
    >>> y = rr.randomize(np.array([0, 1, 1, 0]), GraphData(np.zeros((4, 1))))
    >>> y[[0, 2]].collection == y.collection == rr.collection_.id   # indexing keeps it
    True
    >>> type(y + 0).__name__   # computed: plain labels, read as clean labels
    'ndarray'
    """

    def __new__(cls, labels, collection):
        base = np.array(labels)   # (a copy: the caller's array stays writable)
        base.flags.writeable = False   # its memory too, not only the marked view of it
        obj = base.view(cls)
        obj.collection = str(collection)
        obj.flags.writeable = False
        return obj

    def __array_finalize__(self, obj):
        # views, slices and y[rows] of reports are reports of the same collection, read-only
        # so that no edit hides clean labels behind the mark; a copy (y.copy(), astype,
        # owning its data) is unmarked: it may be edited
        self.collection = getattr(obj, "collection", None) if self.base is not None else None
        if self.collection is not None:
            self.flags.writeable = False

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # computed from the reports: plain data (clean labels to a fit)
        inputs = tuple(_plain(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(x) for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain_all(args), **_plain_all(kwargs))

    def __reduce_ex__(self, protocol):
        return LabelReports, (np.asarray(self), self.collection)


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, LabelReports) else x


def _plain_all(obj):
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain_all(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _plain_all(v) for k, v in obj.items()}
    return _plain(obj)


def collection_of(y):
    """The id of the label collection whose reports ``y`` is (:class:`LabelReports`), or
    ``None`` for any other labels."""
    return y.collection if isinstance(y, LabelReports) else None
