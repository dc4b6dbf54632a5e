"""A Pipeline that activates an on-disk graph cache wherever it runs."""

import contextlib
import functools

from sklearn.pipeline import Pipeline
from sklearn.utils.metaestimators import available_if

from ._cache import GraphCache

__all__ = ["CachedPipeline"]

_DELEGATED = ("fit", "fit_transform", "fit_predict", "predict", "predict_proba",
              "predict_log_proba", "decision_function", "score", "score_samples",
              "transform", "inverse_transform")


def _delegate(name):
    parent = getattr(Pipeline, name)

    def available(self):
        # Pipeline's own availability check (available_if on the final step).
        return hasattr(super(CachedPipeline, self), name)

    @functools.wraps(parent)
    def method(self, *args, **kwargs):
        with self._graph_cache_context():
            return getattr(super(CachedPipeline, self), name)(*args, **kwargs)

    return available_if(available)(method) if name != "fit" else method


class CachedPipeline(Pipeline):
    """A :class:`~sklearn.pipeline.Pipeline` whose graph steps use an on-disk cache.

    Every method (``fit``, ``predict``, ``score``, ...) runs inside
    ``with GraphCache(graph_cache):``, in whichever process calls it. The
    cache travels with the estimator (it is a parameter), so the clones that
    ``GridSearchCV(..., n_jobs=2)`` fits in worker processes share one
    directory: each perturbation and propagation is computed once per sweep,
    not once per worker and fold. See :class:`GraphCache` for what is stored
    and why the directory is as sensitive as the reports.

    Parameters
    ----------
    steps : list of (str, estimator) tuples
        As for :class:`~sklearn.pipeline.Pipeline`.
    graph_cache : str, path-like, GraphCache or None, default=None
        Cache directory (or a configured :class:`GraphCache`). ``None``: no
        cache (a plain Pipeline).
    transform_input : list of str or None, default=None
        As for :class:`~sklearn.pipeline.Pipeline`.
    memory : str, joblib.Memory or None, default=None
        As for :class:`~sklearn.pipeline.Pipeline` (scikit-learn's cache of
        fitted transformers, independent of ``graph_cache``).
    verbose : bool, default=False
        As for :class:`~sklearn.pipeline.Pipeline`.

    See Also
    --------
    GraphCache : the cache and its privacy rules.

    Examples
    --------
    >>> import tempfile
    >>> from skldp.experiments import CachedPipeline
    >>> from skldp.mechanisms import HDSMechanism
    >>> from skldp.models import MLPHead
    >>> from skldp.propagation import PPRPropagation
    >>> d = tempfile.mkdtemp()
    >>> pipe = CachedPipeline([("hds", HDSMechanism(eps=1, feature_range=(0, 1),
    ...                                             random_state=0)),
    ...                        ("ppr", PPRPropagation()), ("clf", MLPHead())],
    ...                       graph_cache=d)
    >>> pipe.get_params()["graph_cache"] == d
    True
    """

    def __init__(self, steps, *, graph_cache=None, transform_input=None, memory=None,
                 verbose=False):
        self.graph_cache = graph_cache
        super().__init__(steps, transform_input=transform_input, memory=memory,
                         verbose=verbose)

    @contextlib.contextmanager
    def _graph_cache_context(self):
        cache = self.graph_cache
        if cache is None:
            yield None
            return
        if not isinstance(cache, GraphCache):
            cache = GraphCache(cache)
        with cache:
            yield cache

    for _name in _DELEGATED:
        locals()[_name] = _delegate(_name)
    del _name
