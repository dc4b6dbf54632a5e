"""The pipelines of the label-scarce and total-budget studies, and their choice on validation.

Each *kind* names a pipeline family; :func:`candidates` gives its few settings
(PPR's ``alpha``, label propagation's ``alpha``, LPGNN's feature steps) and
:func:`fit_select` fits each on the training nodes, keeps the one with the best
accuracy on the validation nodes and scores it on the test nodes. Nothing reads
a test label before the score.

Which rows a candidate is fitted on:

* ``"fit"``: training and validation nodes, with ``validation=val`` (the heads
  and GNNs stop early on the validation nodes, which train no weight; LPGNN's
  label propagation does read their labels: its training targets are denoised
  over every fit row);
* ``"train"``: training nodes only. Correct and Smooth propagates every label
  it is fitted on, so it sees the training labels alone (a validation label
  among its sources would make the validation score meaningless); its base
  model then gets no validation node (an ``MLPHead`` stops early on a held-out
  10 % of the training nodes only from 1,000 of them, and below 500 chooses its
  weight decay by cross-validating them);
* ``"refit"``: chosen as ``"train"``, then the chosen setting is fitted again
  on the training and validation nodes: the label-propagation floor of a
  comparison with LPGNN (``lp_sources="fit"``) propagates the labels of the
  same rows as LPGNN.

Private labels (the total-budget study): the label mechanism is a parameter of
the model that randomizes the training labels (``label_mechanism`` of
:class:`~skldp.baselines.LabelPropagationClassifier` and
:class:`~skldp.baselines.CorrectAndSmooth`, ``eps_y`` of
:class:`~skldp.models.LPGNNClassifier`); the validation users answer the same
collection (:func:`noisy_validation_labels`), so the choice reads only
randomized labels and costs no budget beyond the users' one label report.
"""

import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline

__all__ = ["ALPHAS", "LP_ALPHAS", "LPGNN_X_STEPS", "GERMAN_CODES", "GERMAN_UNBOUNDED",
           "RGNN_CONFIG", "MECHANISMS", "private_input", "binary_features", "candidates",
           "fit_select", "noisy_validation_labels"]

ALPHAS = (0.05, 0.1, 0.2)             # PPR teleport probabilities, chosen on validation
LP_ALPHAS = (0.5, 0.8, 0.9, 0.99)     # label propagation's alpha, chosen on validation
LPGNN_X_STEPS = (4, 16)               # LPGNN's feature KProp steps, chosen on validation

# German credit (the NIFTY graph over the UCI Statlog German Credit data): the public
# domain of each column from the data's documentation, never from the data (the
# honest-utility page gives the sources). The three columns documented only as
# "numerical" have no public bounds: private pipelines leave them out.
GERMAN_CODES = {"LoanRateAsPercentOfIncome": (1, 4), "YearsAtCurrentHome": (1, 4),
                "NumberOfOtherLoansAtBank": (1, 4), "NumberOfLiableIndividuals": (1, 2)}
GERMAN_UNBOUNDED = ("Age", "LoanDuration", "LoanAmount")

# RGNN's settings (its study, after Bhaila et al., SDM 2024): bag-of-words columns in binary
# groups of this many columns, K_x = K_y propagation steps, METIS bags.
RGNN_CONFIG = {"cora": (25, 8, 64), "citeseer": (70, 8, 64), "facebook": (100, 4, 128),
               "twitch_ENGB": (64, 4, 64), "wiki_chameleon": (63, 8, 64)}

MECHANISMS = {"hds": "HDS (PrivGE)", "multibit": "multi-bit (LPGNN)",
              "setvalued": "set-valued"}


def private_input(G, dataset):
    """The graph the devices hold for a private pipeline, and the public feature bounds.

    Parameters
    ----------
    G : GraphData
        The dataset's graph.
    dataset : str
        Its name (German credit keeps its 24 columns with documented domains).

    Returns
    -------
    G : GraphData
    feature_range : tuple or tuple of ndarrays
        Public bounds, per column for German credit.
    """
    if dataset != "german":
        return G, (0, 1)
    names = [str(n) for n in G.feature_names]
    keep = [j for j, n in enumerate(names) if n not in GERMAN_UNBOUNDED]
    full = G.full()
    X = full._store.features[:, keep]
    kept = [names[j] for j in keep]
    lo = np.array([GERMAN_CODES.get(n, (0, 1))[0] for n in kept], dtype=float)
    hi = np.array([GERMAN_CODES.get(n, (0, 1))[1] for n in kept], dtype=float)
    return full.with_features(X, feature_names=kept, source="users"), (lo, hi)


def binary_features(dataset):
    """Whether the set-valued and grouped GRR-FS pipelines apply (0/1 features)."""
    return dataset in RGNN_CONFIG


def _head(seed, val, normalization):
    from skldp.models import MLPHead
    return MLPHead(normalization=normalization, validation=val, random_state=seed)


def _mechanism(family, eps, seed, feature_range):
    from skldp.mechanisms import HDSMechanism, MultiBitMechanism, SetValuedMechanism
    rs = 1000 + seed       # the collection of this seed (the model's seed differs)
    if family == "hds":
        return HDSMechanism(eps, k="auto", feature_range=feature_range, random_state=rs)
    if family == "multibit":
        return MultiBitMechanism(eps, feature_range=feature_range, random_state=rs)
    if family == "setvalued":
        return SetValuedMechanism(eps, ell=1, random_state=rs)
    raise ValueError(f"unknown mechanism family {family!r}; one of {sorted(MECHANISMS)}.")


def _label_mechanism(eps_y, classes, seed):
    from skldp.mechanisms import LabelRandomizedResponse
    if eps_y is None or np.isinf(eps_y):
        return None
    return LabelRandomizedResponse(float(eps_y), classes=classes, random_state=2000 + seed)


def candidates(kind, *, eps=None, eps_y=None, classes=None, seed=0, val=None,
               feature_range=(0, 1), normalization="l2", rgnn=None, lp_sources="train"):
    """The candidate estimators of one pipeline family.

    Parameters
    ----------
    kind : str
        ``"lp"``, ``"structural"``, ``"structural-cs"``, ``"raw"``, ``"raw-cs"``,
        ``"<family>"`` or ``"<family>-cs"`` with a family of :data:`MECHANISMS`,
        ``"union"`` (structural features beside multi-bit -> PPR), ``"lpgnn"`` or
        ``"rgnn"``.
    eps : float or None
        Feature budget per user (private kinds).
    eps_y : float or None
        Label budget per user (``None`` or ``inf``: labels in the clear).
    classes : array-like or None
        The public label domain (needed with ``eps_y``).
    seed : int
        Seed of the collections (offset) and of the models.
    val : ndarray of bool or None
        Validation mask over all nodes.
    feature_range : tuple
        Public bounds of the features.
    normalization : str
        ``MLPHead``'s input normalisation.
    rgnn : tuple or None
        ``(group size, hops, clusters)`` for ``"rgnn"``.
    lp_sources : {"train", "fit"}
        The rows whose labels ``"lp"`` propagates at test time: the training
        nodes, or (``"refit"``) the training and validation nodes, as LPGNN does.

    Returns
    -------
    candidates : list of (dict, estimator, str)
        The setting, the unfitted estimator and the rows it fits on
        (``"fit"``, ``"train"`` or ``"refit"``).
    """
    from skldp.baselines import (
        CorrectAndSmooth,
        GraphFeatureUnion,
        LabelPropagationClassifier,
        StructuralFeatures,
    )
    from skldp.propagation import PPRPropagation
    lm = _label_mechanism(eps_y, classes, seed)
    s = seed

    def ppr(a):
        return PPRPropagation(alpha=a)

    if kind == "lp":
        if lp_sources not in ("train", "fit"):
            raise ValueError(f"lp_sources must be 'train' or 'fit', got {lp_sources!r}.")
        rows = "refit" if lp_sources == "fit" else "train"
        return [({"alpha": a}, LabelPropagationClassifier(a, label_mechanism=lm), rows)
                for a in LP_ALPHAS]
    if kind == "structural":
        if lm is not None:
            raise ValueError("kind 'structural' takes clean labels; use 'structural-cs'.")
        return [({}, Pipeline([("structure", StructuralFeatures(random_state=s)),
                               ("clf", _head(s, val, normalization))]), "fit")]
    if kind == "structural-cs":
        base = Pipeline([("structure", StructuralFeatures(random_state=s)),
                         ("clf", _head(s, None, normalization))])
        return [({}, CorrectAndSmooth(base, label_mechanism=lm), "train")]
    private = kind.split("-")[0]
    if kind in ("raw", "raw-cs") or private in MECHANISMS:
        def steps(a, v):
            first = [] if private == "raw" else [
                ("mech", _mechanism(private, eps, s, feature_range))]
            return Pipeline(first + [("ppr", ppr(a)), ("clf", _head(s, v, normalization))])
        if kind.endswith("-cs"):
            return [({"alpha": a}, CorrectAndSmooth(steps(a, None), label_mechanism=lm),
                     "train") for a in ALPHAS]
        if lm is not None:
            raise ValueError(f"kind {kind!r} takes clean labels; use '{kind}-cs'.")
        return [({"alpha": a}, steps(a, val), "fit") for a in ALPHAS]
    if kind == "union":
        if lm is not None:
            raise ValueError("kind 'union' takes clean labels.")
        return [({"alpha": a}, Pipeline([
            ("union", GraphFeatureUnion([
                ("structure", StructuralFeatures(random_state=s)),
                ("private", Pipeline([("mech", _mechanism("multibit", eps, s, feature_range)),
                                      ("ppr", ppr(a))]))])),
            ("clf", _head(s, val, normalization))]), "fit") for a in ALPHAS]
    if kind == "lpgnn":
        from skldp.models import LPGNNClassifier
        ey = np.inf if eps_y is None else float(eps_y)
        return [({"x_steps": k}, Pipeline([
            ("mech", _mechanism("multibit", eps, s, feature_range)),
            ("clf", LPGNNClassifier(eps_y=ey, classes=classes, x_steps=k, validation=val,
                                    random_state=s))]), "fit") for k in LPGNN_X_STEPS]
    if kind == "rgnn":
        from skldp.mechanisms import FeatureGrouper, GRRFSMechanism
        from skldp.models import RGNNClassifier
        from skldp.reconstruction import FrequencyReconstructor
        if rgnn is None:
            raise ValueError("kind 'rgnn' needs its (group size, hops, clusters).")
        group, hops, clusters = rgnn
        ey = np.inf if eps_y is None else float(eps_y)
        # one grouped feature per user (m = 1): for binary groups the variance of a
        # coordinate's estimate under a total budget grows with m
        return [({}, Pipeline([
            ("group", FeatureGrouper(group)),
            ("grr", GRRFSMechanism(eps, m=1, domain_sizes=2, random_state=1000 + s)),
            ("rec", FrequencyReconstructor(eps, m=1, domain_sizes=2, hops=hops)),
            ("clf", RGNNClassifier(eps_y=ey, hops_y=hops, n_clusters=clusters, classes=classes,
                                   validation=val, random_state=s))]), "fit")]
    raise ValueError(f"unknown kind {kind!r}.")


def _label_step(estimator):
    """The fitted label mechanism of a candidate (its own, or its last step's)."""
    last = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    return getattr(last, "label_mechanism_", None)


def noisy_validation_labels(estimator, G, y, val):
    """The validation users' answers to the candidate's label collection (clean without one).

    Each validation user answers the same collection as the training users,
    once; asking again for the same answer costs nothing.

    Parameters
    ----------
    estimator : fitted estimator
    G : GraphData
        The whole graph.
    y : ndarray of shape (n_nodes,)
        True labels.
    val : ndarray of bool
        Validation mask.

    Returns
    -------
    y_val : ndarray
        The labels the validation score reads (randomized with a label mechanism).
    """
    mech = _label_step(estimator)
    if mech is None:
        return y[val]
    return mech.randomize(y[val], G[val])


def fit_select(cands, G, y, masks):
    """Fit every candidate, keep the best on the validation nodes, score it on the test nodes.

    Parameters
    ----------
    cands : list of (dict, estimator, str)
        From :func:`candidates`.
    G : GraphData
        The whole graph (the run's own simulated users).
    y : ndarray of shape (n_nodes,)
        Labels.
    masks : tuple of three boolean ndarrays
        Train, validation and test masks.

    Returns
    -------
    metrics : dict
        ``accuracy`` (test, clean labels), ``val_accuracy`` (against the labels
        the validation users sent), ``fit_seconds`` and the chosen setting.
    model : fitted estimator
    """
    tr, va, te = masks
    rows = {"fit": tr | va, "train": tr, "refit": tr}
    best = None
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for setting, est, which in cands:
            r = rows[which]
            est.fit(G[r], y[r])
            score = float(est.score(G[va], noisy_validation_labels(est, G, y, va)))
            if best is None or score > best[0]:
                best = (score, setting, est)
        score, setting, model = best
        if next(w for st, _, w in cands if st == setting) == "refit":
            model = clone(model).fit(G[tr | va], y[tr | va])
        acc = float(model.score(G[te], y[te]))
    out = {"accuracy": acc, "val_accuracy": score,
           "fit_seconds": time.perf_counter() - t0}
    out.update({k: float(v) for k, v in setting.items()})
    return out, model
