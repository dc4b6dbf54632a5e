"""Saving a fitted pipeline without the users' secrets.

A fitted local DP mechanism holds ``seed_``, the secret of its simulated users'
devices: anyone who has it can invert every report. An integer, a
``RandomState`` or a ``Generator`` given as ``random_state`` regenerates it.
:func:`forget_secrets` replaces each secret by the reports it produced for the
users seen so far and drops every private step's ``random_state``, so that the
pipeline can be pickled and shared: it still predicts for those users, and
refuses new users with a clear error (their reports would need the secret).
"""

import inspect

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline

from .accounting._report import holds_fitted_estimators
from .base import PrivateStepMixin

__all__ = ["forget_secrets"]


def forget_secrets(estimator, X):
    """Delete every local DP secret (``seed_``) of a fitted estimator, keeping the reports.

    Walks a fitted pipeline (or a search's ``best_estimator_``) in order, passing
    ``X`` through the steps: each feature or edge mechanism stores the reports of
    the users of the data it sees (``saved_keys_``, ``saved_reports_`` or
    ``saved_adjacency_``) and drops ``seed_``; label randomisers fitted inside
    classifiers drop ``seed_`` (their reports were used in ``fit``). Then every
    private step (local mechanisms, central trainers, classifiers that randomize
    labels), fitted or not (a search's template too), gets ``random_state=None``:
    an integer or a generator would give the seeds back. So do the values a
    search tried for their ``random_state`` (in its grid, ``cv_results_`` and
    ``best_params_``). Afterwards
    ``transform`` / ``predict`` work for those users and raise a ``ValueError``
    for any other user.

    Pass the whole graph (every user whose prediction you will need), e.g. the
    GraphData the pipeline was fitted on, not a view of the training rows only:
    mechanisms store reports for all nodes of a GraphData. Save that GraphData
    with the estimator: a new process predicts on the loaded one (a GraphData
    rebuilt from the same table is new users). Read more in the
    :ref:`User Guide <data_contract>`.

    Parameters
    ----------
    estimator : fitted estimator, Pipeline or search
        Modified in place.
    X : GraphData or array-like
        The input of ``estimator`` (of its first step for a pipeline).

    Returns
    -------
    estimator
        The same object, without secrets (safe to pickle with respect to them;
        it still holds the users' reports, which are what the server receives).

    Examples
    --------
    >>> import pickle
    >>> from skldp.privacy import forget_secrets
    >>> forget_secrets(pipe, G)                       # doctest: +SKIP
    >>> blob = pickle.dumps((pipe, G))                # doctest: +SKIP
    """
    _forget_tree(estimator, X)
    left = [type(e).__name__ for e in _estimators(estimator) if hasattr(e, "seed_")]
    if left:
        raise ValueError(
            f"forget_secrets could not tell what data reaches {sorted(set(left))} inside this "
            "estimator, so their secrets (seed_) are still there: do not save it. Call "
            "forget_secrets on the fitted step itself with its own input.")
    for est in _estimators(estimator):
        if _makes_secrets(est) and "random_state" in vars(est):
            est.random_state = None
    for est in _estimators(estimator):
        if any(hasattr(est, a) for a in ("param_grid", "param_distributions", "cv_results_")):
            _forget_searched_seeds(est)
    return estimator


def _forget_searched_seeds(search):
    """Set to None the ``random_state`` values a search tries for private steps.

    They are the secrets themselves: ``best_params_``, ``cv_results_`` and the
    grid would give every forgotten ``seed_`` back. A search inside another
    one's template is not fitted, but its grid holds them too.
    """
    template = getattr(search, "estimator", None)
    if template is None or not hasattr(template, "get_params"):
        return
    params = template.get_params(deep=True)
    grids = getattr(search, "param_grid", None)
    if grids is None:
        grids = getattr(search, "param_distributions", None)
    grids = grids if isinstance(grids, list) else [grids] if isinstance(grids, dict) else []
    results = getattr(search, "cv_results_", {})

    def secret(key, setting, many):
        """Whether ``key`` seeds a private step, the step as the template or ``setting`` (a
        grid of lists when ``many``, or one candidate) makes it; unknown: yes."""
        if key.rsplit("__", 1)[-1] != "random_state":
            return False
        path = key.rsplit("__", 1)[0] if "__" in key else ""
        owners = [template] if not path else _owners(path, setting, params, many)
        return any(not isinstance(o, BaseEstimator) or _makes_secrets(o) for o in owners)

    for grid in grids:
        for key in [k for k in grid if secret(k, grid, True)]:
            values = grid[key]
            if hasattr(values, "rvs") and "random_state" in vars(search):
                search.random_state = None   # the search's seed would draw them again
            grid[key] = [None] * len(values) if hasattr(values, "__len__") else [None]
    forgotten = set()
    for candidate in [*results.get("params", ()), getattr(search, "best_params_", {})]:
        for key in [k for k in candidate if secret(k, candidate, False)]:
            candidate[key] = None
            forgotten.add(key)
    for key in forgotten:
        column = results.get(f"param_{key}")
        if column is not None:
            results[f"param_{key}"] = np.ma.MaskedArray(
                np.full(len(column), None, dtype=object), mask=np.ma.getmaskarray(column))


def _owners(path, setting, params, many):
    """The steps at ``path`` (``"a__b"``) as ``setting`` sets them (itself, or a step above
    it), else the template's (``params``)."""
    parts = path.split("__")
    for i in range(len(parts), 0, -1):
        head, rest = "__".join(parts[:i]), "__".join(parts[i:])
        if head in setting:
            values = setting[head]
            values = list(values) if many and isinstance(values, (list, tuple)) else [values]
            return [v if not rest else
                    (v.get_params(deep=True).get(rest) if hasattr(v, "get_params") else None)
                    for v in values]
    return [params.get(path)]


def _makes_secrets(est):
    """Whether ``est``'s random_state seeds a collection or a private training."""
    if isinstance(est, PrivateStepMixin):
        return True
    params = vars(est)
    return params.get("label_mechanism") is not None or "eps_y" in params or any(
        isinstance(v, PrivateStepMixin) for v in params.values())


def _estimators(root):
    """Every estimator reachable from ``root``: its parameters and its fitted attributes."""
    seen, todo = set(), [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, BaseEstimator):
            yield obj
            todo.extend(vars(obj).values())
        elif holds_fitted_estimators(obj):
            todo.extend(vars(obj).values())
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            todo.extend(obj)


def _forget_tree(est, X):
    """Forget the secrets of ``est`` and of every fitted estimator inside it that sees ``X``."""
    best = getattr(est, "best_estimator_", None)          # a search, at any depth
    if best is not None:
        _forget_tree(best, X)
        return
    if hasattr(est, "transformers_"):                      # ColumnTransformer: its columns
        from sklearn.utils import _safe_indexing
        for name, step, columns in est.transformers_:
            if step in (None, "drop", "passthrough") or name == "remainder" and \
                    step == "passthrough":
                continue
            _forget_tree(step, _safe_indexing(X, columns, axis=1))
        return
    if isinstance(est, Pipeline):
        Xt = X
        steps = [s for _, s in est.steps if s not in (None, "passthrough")]
        for i, step in enumerate(steps):
            _forget_tree(step, Xt)
            if i < len(steps) - 1:
                Xt = step.transform(Xt)
        return
    branches = getattr(est, "transformer_list", None)   # FeatureUnion, GraphFeatureUnion
    if isinstance(branches, list):
        for _, branch in branches:
            if branch not in (None, "drop", "passthrough"):
                _forget_tree(branch, X)
        return
    for fold in getattr(est, "calibrated_classifiers_", ()):   # CalibratedClassifierCV
        _forget_tree(fold.estimator, X)
    _forget(est, X)
    inner = getattr(est, "estimator_", None)             # meta-estimators (CorrectAndSmooth)
    if inner is not None and hasattr(inner, "get_params"):
        _forget_tree(inner, X)


def _forget(step, X):
    if hasattr(step, "seed_") and hasattr(step, "_forget_secret"):
        step._forget_secret(X)
    for value in list(vars(step).values()):   # e.g. a classifier's label_mechanism_
        if value is not step and hasattr(value, "seed_") and hasattr(value, "_forget_secret") \
                and not _needs_input(value):
            value._forget_secret()
    # (a feature or edge mechanism held by another step needs the data that reaches it,
    # which only that step knows: its secret stays, and forget_secrets says so)


def _needs_input(mechanism):
    """Whether ``mechanism._forget_secret`` needs the data it saw (it keeps their reports)."""
    X = inspect.signature(mechanism._forget_secret).parameters.get("X")
    return X is not None and X.default is inspect.Parameter.empty
