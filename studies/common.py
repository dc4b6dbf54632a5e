"""Base of the study estimators that collect every user's reports, then fit one model."""

from sklearn.base import BaseEstimator, ClassifierMixin


class CollectionRun(ClassifierMixin, BaseEstimator):
    """One study run: ``fit`` sets ``graph_in_`` (the collected graph) and ``model_``.

    The feature-free kind (``graph_only_kind``) fits no model; subclasses
    predict it with ``_predict_graph_only``.
    """

    graph_only_kind = None

    def predict(self, G):
        """Predicted labels of the rows of ``G``.

        Parameters
        ----------
        G : GraphData
            A view of the same graph.

        Returns
        -------
        y_pred : ndarray of shape (len(G),)
        """
        if self.kind == self.graph_only_kind:
            return self._predict_graph_only(G)
        return self.model_.predict(self.graph_in_[G.rows])


def run_on_split(estimator, G, y, masks):
    """``evaluate`` of a study whose run estimator has its own protocol: ``estimator.run``.

    Parameters
    ----------
    estimator : object
        The run, with a method ``run(G, y, masks)`` returning its metrics (it fits on
        the training nodes only).
    G : GraphData
        The whole graph.
    y : ndarray of shape (n_nodes,)
        Labels.
    masks : tuple of three boolean ndarrays
        Train, validation and test masks.

    Returns
    -------
    metrics : dict of str -> float
    """
    return estimator.run(G, y, masks)
