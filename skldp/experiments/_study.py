"""What a study sweeps: datasets, named pipelines (methods), their grids, seeds and splits."""

import dataclasses
import itertools
import json
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

__all__ = ["Method", "Grid", "RunSpec", "RunContext", "Study", "default_split", "fit_and_score"]

ROLES = ("private", "raw-features", "feature-free", "baseline")


def default_split(y, seed):
    """The random 50/25/25 split of the labelled nodes (``random_node_split``).

    Parameters
    ----------
    y : ndarray of shape (n_nodes,)
        Labels, ``-1`` for unlabelled nodes.
    seed : int
        Split seed.

    Returns
    -------
    masks : tuple of three boolean ndarrays
        Train, validation and test masks over all nodes.
    """
    from ..model_selection import random_node_split
    return random_node_split(y, 0.5, 0.25, 0.25, random_state=seed)


def fit_and_score(estimator, G, y, masks):
    """Default evaluation: fit on train and validation nodes, accuracy on test nodes.

    Classifiers that early-stop on part of what they are fitted on (e.g.
    ``MLPHead(validation_fraction=1/3)``) then train on 50 % and stop on
    25 % of the labelled nodes, as in the papers' protocol; the test labels
    never reach ``fit``.

    Parameters
    ----------
    estimator : estimator
        The unfitted estimator of one run.
    G : GraphData
        The whole graph (all nodes).
    y : ndarray of shape (n_nodes,)
        Labels of all nodes.
    masks : tuple of three boolean ndarrays
        Train, validation and test masks.

    Returns
    -------
    metrics : dict of str -> float
        ``{"accuracy": test accuracy}``.
    """
    train, val, test = masks
    fit = train | val
    estimator.fit(G[fit], y[fit])
    return {"accuracy": float(estimator.score(G[test], y[test]))}


def _canon(value):
    """A JSON-safe canonical form of a grid value (numbers as floats: 1 == 1.0)."""
    if isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, str):
        return bool(value) if isinstance(value, np.bool_) else value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    raise TypeError(f"grid values must be numbers, strings, booleans, None or lists of them "
                    f"(they are written to JSON), got {type(value).__name__}: {value!r}.")


def _key_number(value):
    # 1, 1.0 and np.float32(1) name the same setting; an int no float equals (2**53 + 1,
    # 10**400) stays itself
    if isinstance(value, list):
        return [_key_number(v) for v in value]
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            as_float = float(value)
        except OverflowError:
            return value
        return as_float if as_float == value else value
    return value


@dataclass(frozen=True)
class RunSpec:
    """One run of a study: a dataset, a method, a split, a seed and grid values.

    Attributes
    ----------
    dataset : str
        Dataset name.
    method : str
        Method (named pipeline) name.
    split : str
        Split name.
    seed : int
        Seed of the split, the collections and the model's initialisation.
    params : tuple of (str, value) pairs
        Grid values, sorted by name (``set_params`` names).
    """

    dataset: str
    method: str
    split: str
    seed: int
    params: tuple = ()

    @property
    def key(self):
        """The unique, canonical key of the run (a string).

        Returns
        -------
        key : str
        """
        p = json.dumps({k: _key_number(v) for k, v in self.params}, sort_keys=True)
        return f"{self.dataset}|{self.method}|{self.split}|{self.seed}|{p}"

    @property
    def param_dict(self):
        """The grid values as a dict.

        Returns
        -------
        params : dict
        """
        return dict(self.params)


@dataclass
class RunContext:
    """What a method's factory sees when it builds the estimator of one run.

    Attributes
    ----------
    dataset : str
        Dataset name.
    config : dict
        The study's settings for this dataset (``Study.configs[dataset]``).
    seed : int
        The run's seed.
    params : dict
        The run's grid values (also applied with ``set_params`` afterwards).
    n_nodes : int
        Number of nodes of the graph.
    n_features : int
        Number of node features.
    """

    dataset: str
    config: dict
    seed: int
    params: dict
    n_nodes: int
    n_features: int


def _once(values, what, where):
    """``values`` (a list), each given once: a repeated one would be run twice."""
    seen = []
    for v in values:
        if v in seen:
            raise ValueError(f"{where}: {what} {v!r} is given twice (each run would be "
                             f"done twice); give each {what} once.")
        seen.append(v)
    return values


def _check_name(name, what, study):
    """A method's or split's name: a non-empty string without ``|`` (it is part of each run's
    key, ``dataset|method|split|seed|params``, and of each record)."""
    if not isinstance(name, str):
        raise TypeError(f"Study {study!r}: {what} names are strings (each record carries "
                        f"its {what}), got {name!r}.")
    if not name or "|" in name:
        raise ValueError(f"Study {study!r}: {what} name {name!r} must be a non-empty string "
                         f"without '|' (run keys join dataset|method|split|seed|params: two "
                         f"runs could get one key).")


def _seeds(seeds, where):
    """``seeds`` as a list of distinct non-negative ints (bools and floats refused)."""
    from ..utils.validation import check_int
    seeds = [check_int(s, f"{where} seeds[{i}]") for i, s in enumerate(seeds)]
    return _once(seeds, "seed", where)


def _canon_grid(grid):
    out = {}
    for name, values in dict(grid).items():
        if not isinstance(name, str):
            raise TypeError(f"grid keys are set_params names (str), got {name!r}.")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"grid[{name!r}] must be a list of values, got {values!r}.")
        values = [_canon(v) for v in values]
        if not values:
            raise ValueError(f"grid[{name!r}] is empty.")
        out[name] = values
    return out


@dataclass
class Grid:
    """One part of a method's grid, optionally limited to some datasets, seeds or splits.

    A :class:`Method` whose ``grid`` is a list of parts runs the union of
    their products (as scikit-learn's ``ParameterGrid`` does with a list of
    dicts); a part's ``datasets``, ``seeds`` and ``splits`` narrow the
    study's (e.g. an ablation run on one dataset with two seeds).

    Parameters
    ----------
    params : dict of str -> list
        ``set_params`` names and the values to sweep (may be empty: one run).
    datasets : sequence of str or None, default=None
        Run this part on these of the study's datasets only (``None``: all).
    seeds : sequence of int or None, default=None
        Run this part with these of the study's seeds only.
    splits : sequence of str or None, default=None
        Run this part on these of the study's splits only.
    """

    params: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    datasets: Optional[Sequence[str]] = None
    seeds: Optional[Sequence[int]] = None
    splits: Optional[Sequence[str]] = None

    def __post_init__(self):
        self.params = _canon_grid(self.params)
        if isinstance(self.datasets, str):
            self.datasets = [self.datasets]
        if self.datasets is not None:
            self.datasets = _once(list(self.datasets), "dataset", "Grid")
        if self.seeds is not None:
            self.seeds = _seeds(self.seeds, "Grid")
        if isinstance(self.splits, str):
            self.splits = [self.splits]
        if self.splits is not None:
            self.splits = list(self.splits)

    def covers(self, dataset, split, seed):
        """Whether this part runs on ``dataset`` and ``split`` with ``seed``.

        Returns
        -------
        covered : bool
        """
        return ((self.datasets is None or dataset in self.datasets)
                and (self.splits is None or split in self.splits)
                and (self.seeds is None or seed in self.seeds))


@dataclass
class Method:
    """A named pipeline of a study: a factory, its grid and its role.

    Parameters
    ----------
    factory : callable
        ``factory(ctx: RunContext) -> estimator``: a new unfitted estimator
        for one run (picklable: a module-level function). The grid values
        are then applied with ``set_params``.
    grid : dict of str -> list, or list of dict or Grid, default={}
        ``set_params`` names of the estimator and the values to sweep, e.g.
        ``{"hds__eps": [0.1, 1, np.inf]}``. Every name must be a parameter
        of the estimator (checked before the sweep starts). A list of dicts
        or :class:`Grid` parts runs the union of their products; a
        :class:`Grid` part may be limited to some datasets, seeds or splits.
    role : {"private", "raw-features", "feature-free", "baseline"}, default="private"
        How the summary and the figure show the method: private methods are
        curves against eps; the others are horizontal reference lines.
    data : callable or None, default=None
        ``data(G, y, config) -> (G, y)``: the input of this method (e.g.
        features replaced by noise for a graph-only baseline). Computed once
        per dataset and process.
    evaluate : callable or None, default=None
        ``evaluate(estimator, G, y, masks) -> dict of metric -> float``;
        :func:`fit_and_score` by default.
    label : str or None, default=None
        Name shown in tables and figures (the method's name by default).
    """

    factory: Callable
    grid: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    role: str = "private"
    data: Optional[Callable] = None
    evaluate: Optional[Callable] = None
    label: Optional[str] = None

    def __post_init__(self):
        if not callable(self.factory):
            raise TypeError(f"Method.factory must be callable, got {self.factory!r}.")
        if self.role not in ROLES:
            raise ValueError(f"Method.role must be one of {ROLES}, got {self.role!r}.")
        if isinstance(self.grid, (list, tuple)):
            if not self.grid:
                raise ValueError("Method.grid is an empty list of parts.")
            self.grid = [g if isinstance(g, Grid) else Grid(g) for g in self.grid]
        elif isinstance(self.grid, Grid):
            self.grid = [self.grid]
        else:
            self.grid = _canon_grid(self.grid)

    @property
    def parts(self):
        """The grid as a list of :class:`Grid` parts (one for a plain dict).

        Returns
        -------
        parts : list of Grid
        """
        return [Grid(self.grid)] if isinstance(self.grid, dict) else list(self.grid)


@dataclass
class Study:
    """A sweep: datasets x methods (each with its grid) x splits x seeds.

    Parameters
    ----------
    name : str
        Name of the study; the runs file is ``<name>_runs.jsonl``. Letters,
        digits, ``-`` and ``_`` only.
    datasets : sequence of str
        Names for :func:`skldp.datasets.load_dataset`, each given once. Workers
        load them themselves (the graph never travels with a task).
    methods : dict of str -> Method
        The named pipelines (names: non-empty strings without ``|``).
    seeds : sequence of int, default=range(5)
        Seeds, each given once (non-negative integers; floats and booleans are
        refused); seed ``s`` fixes the split, the collections and the model's
        initialisation (the factory passes it on).
    splits : dict of str -> callable, default={"random": default_split}
        ``split(y, seed) -> (train, val, test)`` boolean masks; a split
        function with a ``dataset`` parameter also gets the dataset's name
        (e.g. to return a dataset's public split). Names as for methods.
    configs : dict of str -> dict, default={}
        Per-dataset settings handed to factories (``ctx.config``).
    metric : str, default="accuracy"
        The metric of the summary table and the figure.
    scale : float, default=100.0
        Factor applied to the metric in the summary (100: a fraction shown
        in percent; 1: a metric recorded as it is shown).
    digits : int, default=1
        Decimals of the summary's mean and std.
    title : str or None, default=None
        Title of the summary page.
    description : str, default=""
        Markdown put under the title of the summary page.
    quick : dict or None, default=None
        Overrides for a quick check (``--quick``): any of ``datasets``,
        ``seeds``, ``grid`` (``{method: {param: values}}``, values that
        replace the method's own, in each of its parts; or ``{method: list
        of Grid}``, a new grid), ``configs``.
    report : callable or None, default=None
        ``report(records) -> str``: a table of the study's own that
        ``python -m skldp reproduce`` prints after the summary (e.g. beside
        published values).

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> from skldp.experiments import Method, Study
    >>> from skldp.mechanisms import HDSMechanism
    >>> from skldp.models import MLPHead
    >>> from skldp.propagation import PPRPropagation
    >>> def privge(ctx):
    ...     return Pipeline([("hds", HDSMechanism(feature_range=(0, 1),
    ...                                           random_state=ctx.seed)),
    ...                      ("ppr", PPRPropagation()),
    ...                      ("clf", MLPHead(random_state=ctx.seed))])
    >>> study = Study("demo", ["cora"], {"hds": Method(privge, {"hds__eps": [0.5, 1]})},
    ...               seeds=[0, 1])
    >>> len(study.runs())
    4
    """

    name: str
    datasets: Sequence[str]
    methods: Mapping[str, Method]
    seeds: Sequence[int] = range(5)
    splits: Mapping[str, Callable] = field(default_factory=lambda: {"random": default_split})
    configs: Mapping[str, dict] = field(default_factory=dict)
    metric: str = "accuracy"
    scale: float = 100.0
    digits: int = 1
    title: Optional[str] = None
    description: str = ""
    quick: Optional[dict] = None
    report: Optional[Callable] = None

    def __post_init__(self):
        import re
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", self.name):
            raise ValueError(f"Study name must be letters, digits, '-' or '_', got "
                             f"{self.name!r}.")
        if isinstance(self.datasets, str):
            self.datasets = [self.datasets]
        self.datasets = _once(list(self.datasets), "dataset", f"Study {self.name!r}")
        if not self.datasets:
            raise ValueError(f"Study {self.name!r} has no dataset.")
        if not self.methods:
            raise ValueError(f"Study {self.name!r} has no method.")
        for m, method in self.methods.items():
            _check_name(m, "method", self.name)
            if not isinstance(method, Method):
                raise TypeError(f"methods[{m!r}] must be a skldp.experiments.Method, got "
                                f"{type(method).__name__}.")
        self.seeds = _seeds(self.seeds, f"Study {self.name!r}")
        if not self.seeds:
            raise ValueError(f"Study {self.name!r} has no seed.")
        if not self.splits:
            raise ValueError(f"Study {self.name!r} has no split.")
        for split in self.splits:
            _check_name(split, "split", self.name)
        unknown = set(self.configs) - set(self.datasets)
        if unknown:
            raise ValueError(f"configs name datasets the study does not have: "
                             f"{sorted(unknown)}.")

    def runs(self):
        """Every run of the study, seeds outermost (each setting gets a seed first).

        Returns
        -------
        runs : list of RunSpec
        """
        out = []
        for seed in self.seeds:
            for dataset in self.datasets:
                for split in self.splits:
                    for m, method in self.methods.items():
                        keys = set()
                        for part in method.parts:
                            if not part.covers(dataset, split, seed):
                                continue
                            names = sorted(part.params)
                            for values in itertools.product(*(part.params[n] for n in names)):
                                spec = RunSpec(dataset, m, split, seed,
                                               tuple(zip(names, values, strict=True)))
                                if spec.key not in keys:  # parts may overlap
                                    keys.add(spec.key)
                                    out.append(spec)
        return out

    def quick_variant(self):
        """The reduced study of ``--quick`` (named ``<name>_quick``).

        Returns
        -------
        study : Study
        """
        q = dict(self.quick or {})
        unknown = set(q) - {"datasets", "seeds", "grid", "configs"}
        if unknown:
            raise ValueError(f"Study.quick has unknown keys {sorted(unknown)}.")
        methods = dict(self.methods)
        for m, grid in q.get("grid", {}).items():
            if m not in methods:
                raise ValueError(f"Study.quick['grid'] names an unknown method {m!r}.")
            old = methods[m].grid
            if isinstance(grid, (list, tuple, Grid)):  # parts: the method's new grid
                new = grid
            elif isinstance(old, dict):
                new = {**old, **grid}
            else:  # parts: each keeps its scope, the given values replace its own
                new = [dataclasses.replace(p, params={**p.params, **grid}) for p in old]
            methods[m] = dataclasses.replace(methods[m], grid=new)
        configs = {k: dict(v) for k, v in self.configs.items()}
        for ds, over in q.get("configs", {}).items():
            configs.setdefault(ds, {}).update(over)
        datasets = list(q.get("datasets", self.datasets))
        return dataclasses.replace(
            self, name=f"{self.name}_quick", datasets=datasets, methods=methods,
            seeds=list(q.get("seeds", self.seeds)),
            configs={k: v for k, v in configs.items() if k in datasets}, quick=None)
