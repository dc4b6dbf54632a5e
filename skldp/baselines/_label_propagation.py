"""Label propagation (Zhou et al., NIPS 2004): a classifier that uses the graph and no feature."""

import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..base import GraphClassifierMixin, fitted_token, note_edge_read, note_label_read
from ..utils.validation import LABEL_MECHANISM_CONSTRAINT, Count, Interval, check_graph_data
from ._graph_ops import (
    check_training_population,
    fit_label_mechanism,
    node_positions,
    solve_shifted,
    sym_normalized_adjacency,
)

__all__ = ["LabelPropagationClassifier"]


def label_matrix(positions, labels, n_nodes, n_classes):
    """One-hot rows of the labelled nodes (summed for repeated nodes), zeros elsewhere."""
    Y = sp.coo_matrix((np.ones(len(positions)), (positions, labels)),
                      shape=(n_nodes, n_classes))
    return Y.toarray()


class LabelPropagationClassifier(GraphClassifierMixin, BaseEstimator):
    """Label propagation on a graph (Zhou et al., 2004): no node feature is used.

    ``predict_proba`` spreads the one-hot labels of the training nodes over
    the graph, ``F = (1 - alpha) (I - alpha S)^-1 Y`` with
    ``S = D^-1/2 A D^-1/2``, and normalises the rows. The node features are
    ignored: this is the feature-free baseline a private-feature model has to
    beat. The labels can be randomized too (``label_mechanism``).

    Read more in the :ref:`User Guide <label_propagation>`.

    Parameters
    ----------
    alpha : float in [0, 1), default=0.9
        Weight of the neighbours' labels against a node's own label; ``0``
        returns the training labels and the class frequencies elsewhere.
    label_mechanism : label mechanism or None, default=None
        A label LDP mechanism with ``fit`` and ``randomize`` (fitted as a clone).
        Its public ``classes`` give ``classes_``.
    noise_correction : bool, default=True
        With a label mechanism that exposes ``transition_matrix_`` ``T``,
        multiply each row of ``F`` by ``T^-1`` before normalising (backward
        correction; the predicted classes of randomized response are unchanged).
    tol : float, default=1e-6
        Relative residual at which conjugate gradients stop (per class).
    max_iter : int, default=1000
        Maximum number of conjugate-gradient steps; a
        :class:`~sklearn.exceptions.ConvergenceWarning` is raised if ``tol``
        is not reached.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels (the mechanism's public domain with ``label_mechanism``).
    train_keys_ : ndarray of uint64
        Node keys of the training nodes (see :attr:`skldp.GraphData.node_keys`).
    train_population_ : str
        Id of their population: ``predict`` refuses another population's graph.
    train_labels_ : ndarray of int
        Their labels as positions in ``classes_`` (the *noisy* labels with
        ``label_mechanism``; the clean labels are not kept).
    label_mechanism_ : fitted label mechanism
        Only with ``label_mechanism``; its ``epsilon_`` is the label budget.
    n_features_in_ : int
        Number of node features of the fitted view (not used).

    See Also
    --------
    skldp.baselines.CorrectAndSmooth : Label propagation around any base classifier.
    skldp.baselines.StructuralFeatures : Node features from the graph alone.

    References
    ----------
    .. [1] D. Zhou, O. Bousquet, T. N. Lal, J. Weston and B. Schölkopf,
       "Learning with Local and Global Consistency", NIPS 2004, §2.
    .. [2] G. Patrini, A. Rozza, A. K. Menon, R. Nock and L. Qu, "Making Deep
       Neural Networks Robust to Label Noise: a Loss Correction Approach",
       CVPR 2017 (backward correction).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skldp import GraphData
    >>> from skldp.baselines import LabelPropagationClassifier
    >>> A = sp.csr_array(np.array([[0, 1, 0, 0], [1, 0, 0, 0],
    ...                            [0, 0, 0, 1], [0, 0, 1, 0]]))
    >>> G = GraphData(np.zeros((4, 1)), A)
    >>> lp = LabelPropagationClassifier().fit(G[[0, 2]], [0, 1])
    >>> lp.predict(G[[1, 3]])
    array([0, 1])
    """

    def __init__(self, alpha=0.9, *, label_mechanism=None, noise_correction=True, tol=1e-6,
                 max_iter=1000):
        self.alpha = alpha
        self.label_mechanism = label_mechanism
        self.noise_correction = noise_correction
        self.tol = tol
        self.max_iter = max_iter

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, 1, closed="left")],
        "label_mechanism": LABEL_MECHANISM_CONSTRAINT,
        "noise_correction": ["boolean"],
        "tol": [Interval(Real, 0, np.inf, closed="neither")],
        "max_iter": [Count(1)],
    }

    # not prefer_skip_nested_validation: the label mechanism is the user's, unchecked
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Store the training nodes and their (possibly randomized) labels.

        Parameters
        ----------
        X : GraphData
            View of the training nodes of a graph with a symmetric adjacency.
        y : array-like of shape (n_rows,)
            Their labels (``-1``, "unlabelled", is an error).

        Returns
        -------
        self
        """
        G = check_graph_data(X, self, require_symmetric=True)
        y = self._check_labels(y, len(G), G)
        # its read of the graph (whether its edges were collected) is noted before any
        # label is sent and after the label collection's checks
        y_used, mech = fit_label_mechanism(self, G, y,
                                           lambda: note_edge_read(self, G, fitting=True))
        if mech is None:
            y_enc = self._encode_labels(y_used, len(G), G)
            note_label_read(self, G, y_used)
        else:
            self.classes_ = mech.classes_
            y_enc = mech.encode(y_used)
        self.train_keys_ = np.array(G.node_keys[G.rows], dtype=np.uint64)
        self.train_population_ = G.population.id
        self.train_labels_ = np.asarray(y_enc, dtype=np.int64)
        self.n_features_in_ = G.shape[1]
        return self

    def predict_proba(self, X):
        """Normalised label-propagation scores of the rows of ``X``.

        Parameters
        ----------
        X : GraphData
            A view of the graph the model was fitted on.

        Returns
        -------
        proba : ndarray of shape (n_rows, n_classes)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self, "train_labels_")
        G = check_graph_data(X, self, require_symmetric=True)
        check_training_population(G, self)
        note_edge_read(self, G)   # the edges it reads (charged when due)
        key = ("skldp.baselines.label_propagation", fitted_token(self))
        P = G.memo_get(key)
        if P is None:
            P = G.memo_set(key, self._propagate(G))
        return P[G.rows]

    def _correction(self):
        """``T^-1`` of the fitted label mechanism, or ``None`` when no correction applies."""
        mech = getattr(self, "label_mechanism_", None)
        T = getattr(mech, "transition_matrix_", None)
        if not self.noise_correction or T is None:
            return None
        T = np.asarray(T, dtype=np.float64)
        if np.allclose(T, np.eye(len(T))):
            return None
        return np.linalg.inv(T)

    def _propagate(self, G):
        """Normalised ``F`` for all nodes of ``G``'s graph."""
        name = type(self).__name__
        S = sym_normalized_adjacency(G, owner=name)
        pos = node_positions(G, self.train_keys_, name)
        c = len(self.classes_)
        Y = label_matrix(pos, self.train_labels_, G.n_nodes, c)
        a = float(self.alpha)
        if a == 0.0:
            F = Y
        else:
            F, ok = solve_shifted(S, Y, a, tol=float(self.tol), max_iter=self.max_iter)
            if not ok:
                warnings.warn(f"{name} did not reach tol={self.tol} within "
                              f"max_iter={self.max_iter} conjugate-gradient steps; increase "
                              "max_iter or tol.", ConvergenceWarning, stacklevel=3)
            F *= 1.0 - a
        prior = np.bincount(self.train_labels_, minlength=c).astype(np.float64)
        Tinv = self._correction()
        if Tinv is not None:
            F = np.maximum(F @ Tinv, 0.0)
            prior = np.maximum(prior @ Tinv, 0.0)
        prior = prior / prior.sum() if prior.sum() > 0 else np.full(c, 1.0 / c)
        return normalize_rows(F, prior)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def normalize_rows(F, fallback):
    """Rows of ``F`` scaled to sum to one; rows without mass get ``fallback``."""
    s = F.sum(axis=1, keepdims=True)
    has = s[:, 0] > 0
    out = np.empty_like(F)
    out[has] = F[has] / s[has]
    out[~has] = fallback
    return out

