"""Reading a fitted deep LDA the way topic-model users do: words, coherence, the tree.

* :func:`top_words`: each topic's most probable words, the columns of
  ``Phi^(1) ... Phi^(l)`` (the layer's topics projected to the vocabulary);
* :func:`coherence`: per-topic coherence of those words on a reference corpus,
  from document frequencies and document co-occurrences;
* :func:`topic_graph`: the weighted bipartite graphs between adjacent layers,
  ``Phi^(l+1)[k, j]`` being the weight of lower topic ``k`` in upper topic ``j``
  (Cong et al. 2017, Eq. 1: ``theta^(l) ~ Gam(Phi^(l+1) theta^(l+1), ...)``);
* :class:`TopicsMixin`: :class:`~skdgm.DeepLDA`'s ``topic_words``, ``coherence``
  and ``topic_hierarchy``, which validate and call the three.

The coherence measures
----------------------
With ``N`` documents, ``D(w)`` the number containing word ``w`` and ``D(w, v)``
the number containing both, and a topic's top words ``w_1, ..., w_n`` in order:

* ``"u_mass"`` (Mimno et al. 2011) averages, over the pairs ``i > j``,
  ``log((D(w_i, w_j) / N + eps) / (D(w_j) / N))`` with ``eps = 1e-12``: each
  word conditioned on the better-ranked ones. This is gensim's
  ``CoherenceModel(coherence="u_mass")`` (segmentation "one_pre", arithmetic
  mean), term for term.
* ``"npmi"`` (Bouma 2009; Aletras & Stevenson 2013) averages, over the pairs
  ``i != j``, ``log((P(w_i, w_j) + eps) / (P(w_i) P(w_j))) / -log(P(w_i, w_j) +
  eps)`` with ``P(w) = D(w) / N``, ``P(w, v) = D(w, v) / N``: in ``[-1, 1]``, 1
  for words that always occur together. gensim's ``"c_npmi"`` counts
  co-occurrences in sliding windows of 10 tokens over the texts; bag-of-words
  input has no word order, so the window here is the document.

A pair whose conditioning word (``u_mass``) or either word (``npmi``) occurs in
no document of the reference corpus has no defined score; that topic's
coherence is then ``NaN``.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

__all__ = ["COHERENCE_MEASURES", "EPSILON", "TopicsMixin", "coherence", "top_words",
           "topic_graph"]

#: Added to co-occurrence probabilities before the log (gensim's value).
EPSILON = 1e-12
COHERENCE_MEASURES = ("u_mass", "npmi")


def top_words(topics, n_words):
    """Indices of each topic's ``n_words`` most probable words, best first.

    Parameters
    ----------
    topics : ndarray of shape (n_features, n_topics)
        Topics as columns on the simplex.
    n_words : int

    Returns
    -------
    top : ndarray of int of shape (n_topics, n_words)
        Ties are broken by the lower word index (a stable sort).
    """
    order = np.argsort(-topics.T, axis=1, kind="stable")
    return order[:, :n_words]


def _occurrence(X):
    """Documents x words presence (0/1) as CSC float64, for column slicing."""
    B = sp.csc_matrix(X, dtype=np.float64, copy=True)
    B.data = (B.data > 0).astype(np.float64)
    B.eliminate_zeros()
    return B


def coherence(X, top, measure):
    """Per-topic coherence of the word lists ``top`` on the corpus ``X``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_documents, n_features)
        Counts (only whether each is positive matters).
    top : ndarray of int of shape (n_topics, n_words)
        Each topic's words, best first (:func:`top_words`).
    measure : {"u_mass", "npmi"}
        See the module docstring.

    Returns
    -------
    scores : ndarray of shape (n_topics,)
        ``NaN`` for a topic with a pair that has no defined score.
    """
    N = X.shape[0]
    words, local = np.unique(top, return_inverse=True)
    local = local.reshape(top.shape)
    B = _occurrence(X)[:, words]
    co = (B.T @ B).toarray() / N          # P(w, v); its diagonal is P(w)
    p = np.diag(co).copy()
    n = top.shape[1]
    i, j = np.tril_indices(n, k=-1)        # i > j: w_i after the better-ranked w_j
    wi, wj = local[:, i], local[:, j]
    joint = co[wi, wj] + EPSILON
    with np.errstate(divide="ignore", invalid="ignore"):
        if measure == "u_mass":
            terms = np.log(joint / p[wj])
        elif measure == "npmi":
            # symmetric in the pair: the mean over i != j is the mean over i > j
            terms = np.log(joint / (p[wi] * p[wj])) / -np.log(joint)
        else:
            raise ValueError(f"measure must be one of {COHERENCE_MEASURES}, got {measure!r}")
    terms = np.where(np.isfinite(terms), terms, np.nan)
    if terms.shape[1] == 0:
        return np.full(top.shape[0], np.nan)
    return terms.mean(axis=1)


def topic_graph(topics, *, min_weight=0.0):
    """The edges between adjacent layers as a dict of dicts (networkx's adjacency).

    Parameters
    ----------
    topics : list of ndarray
        ``topics[l]`` is ``Phi^(l+1)`` of shape ``(K_l, K_{l+1})`` (``K_0`` the
        vocabulary); only ``topics[1:]`` link topics to topics.
    min_weight : float
        Edges whose weight ``Phi^(l+1)[k, j]`` is below it are left out.

    Returns
    -------
    graph : dict
        ``graph[(l + 1, j)][(l, k)] = {"weight": Phi^(l+1)[k, j]}`` for layers
        ``l = 1 .. L-1`` (1-based), upper topic to lower topic; every topic of
        every layer is a key, layer-1 topics with no children.
    """
    graph = {(1, k): {} for k in range(topics[0].shape[1])}
    for l, phi in enumerate(topics[1:], start=1):
        for j in range(phi.shape[1]):
            col = phi[:, j]
            graph[(l + 1, j)] = {(l, int(k)): {"weight": float(col[k])}
                                 for k in np.flatnonzero(col >= min_weight)}
    return graph


class TopicsMixin:
    """DeepLDA's topic-reading methods (the estimator's file holds the orchestration).

    Reads ``topics_``, ``n_features_in_``, ``projected_topics`` and ``_check_X`` of
    the fitted estimator.
    """

    def _check_int(self, name, value, high, meaning):
        if (not isinstance(value, numbers.Integral) or isinstance(value, bool)
                or not 1 <= value <= high):
            raise ValueError(f"{name} must be an int in 1..{high} ({meaning}), got {value!r}")
        return int(value)

    def _check_layer(self, layer):
        return self._check_int("layer", layer, len(self.topics_), "1 is the bottom layer")

    def _check_n_words(self, n_words):
        return self._check_int("n_words", n_words, self.n_features_in_,
                               "the vocabulary size")

    def topic_words(self, n_words=10, *, layer=1, feature_names=None):
        """Each topic's most probable words, best first.

        The topics of layer ``layer`` are read in vocabulary space, as the columns
        of ``Phi^(1) ... Phi^(layer)`` (:meth:`projected_topics`): an upper topic's
        words are those of the lower topics it combines, weighted by ``Phi``.

        Parameters
        ----------
        n_words : int, default=10
            Words per topic (at most the vocabulary size).
        layer : int, default=1
            1-based layer.
        feature_names : array-like of str of shape (n_features,), optional
            The vocabulary, e.g. a fitted ``CountVectorizer``'s
            ``get_feature_names_out()``; without it the words are column indices.

        Returns
        -------
        words : ndarray of shape (K_layer, n_words)
            Row ``k``: topic ``k``'s words, most probable first (ties broken by the
            lower index); strings (the dtype of ``feature_names``) or int indices.

        Raises
        ------
        ValueError
            For an invalid ``n_words`` or ``layer``, or ``feature_names`` of the
            wrong length.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        coherence : how often these words occur together in a corpus.
        topic_hierarchy : which lower topics each upper topic combines.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 6))
        >>> lda = DeepLDA(n_components=(3, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> lda.topic_words(2, layer=2, feature_names=list("abcdef")).shape
        (2, 2)
        """
        check_is_fitted(self, "topics_")
        n_words, layer = self._check_n_words(n_words), self._check_layer(layer)
        top = top_words(self.projected_topics(layer), n_words)
        if feature_names is None:
            return top
        names = np.asarray(feature_names)
        if names.shape != (self.n_features_in_,):
            raise ValueError(f"feature_names must have one name per feature "
                             f"({self.n_features_in_}), got shape {names.shape}")
        return names[top]

    def coherence(self, X, *, measure="u_mass", n_words=10, layer=1):
        """Per-topic coherence of the top words on a reference corpus ``X``.

        From document frequencies ``D(w)`` and co-occurrences ``D(w, v)`` over the
        ``N`` documents of ``X``, for a topic's words ``w_1, ..., w_n``
        (:meth:`topic_words`), best first:

        * ``"u_mass"`` (Mimno et al. 2011): the mean over ``i > j`` of
          ``log((D(w_i, w_j) / N + 1e-12) / (D(w_j) / N))``, gensim's
          ``CoherenceModel(coherence="u_mass")`` on the same words and corpus;
          at most 0, higher is more coherent.
        * ``"npmi"`` (normalised pointwise mutual information; Aletras &
          Stevenson 2013): the mean over ``i != j`` of
          ``log((P(w_i, w_j) + 1e-12) / (P(w_i) P(w_j))) / -log(P(w_i, w_j) + 1e-12)``
          with ``P = D / N``, in ``[-1, 1]``. Co-occurrence is within a document
          (gensim's ``"c_npmi"`` uses windows of 10 tokens of the raw text).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_documents, n_features)
            Word counts on the training vocabulary (whether a count is positive
            is all that matters), e.g. the training corpus or a held-out one.
        measure : {"u_mass", "npmi"}, default="u_mass"
        n_words : int, default=10
            Top words per topic (at least 2 for a pair).
        layer : int, default=1
            1-based layer.

        Returns
        -------
        scores : ndarray of shape (K_layer,)
            One per topic; ``NaN`` for a topic with a word (the conditioning word
            for ``u_mass``) that occurs in no document of ``X``.

        Raises
        ------
        ValueError
            For an unknown ``measure``, an invalid ``n_words`` or ``layer``, or
            input that is not counts over ``n_features_in_`` words.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        topic_words : the words scored.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 6))
        >>> lda = DeepLDA(n_components=(3, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> u = lda.coherence(X, n_words=4)
        >>> u.shape, bool(np.all(u <= 0))
        ((3,), True)
        """
        check_is_fitted(self, "topics_")
        if measure not in COHERENCE_MEASURES:
            raise ValueError(f"measure must be one of {COHERENCE_MEASURES}, "
                             f"got {measure!r}")
        n_words, layer = self._check_n_words(n_words), self._check_layer(layer)
        if n_words < 2:
            raise ValueError(f"coherence scores pairs of words: n_words must be at least "
                             f"2, got {n_words}")
        X = self._check_X(X, reset=False)
        if X.shape[0] == 0:
            raise ValueError("coherence needs at least one document in X")
        top = top_words(self.projected_topics(layer), n_words)
        return coherence(X, top, measure)

    def topic_hierarchy(self, *, min_weight=0.0):
        """The weighted graph of the topic tree: which lower topics each upper topic combines.

        Upper topic ``j`` of layer ``l + 1`` is the mixture ``sum_k Phi^(l+1)[k, j]
        phi_k^(l)`` of layer ``l``'s topics (Cong et al. 2017, Eq. 1), so
        ``Phi^(l+1)[k, j]`` (each column sums to one) is the weight of the edge
        from ``j`` down to ``k``.

        Parameters
        ----------
        min_weight : float, default=0.0
            Leave out edges lighter than this (the deep-LDA paper's trees draw
            the heavier ones only).

        Returns
        -------
        graph : dict
            A dict of dicts keyed by ``(layer, topic)`` (1-based layer, 0-based
            topic): ``graph[(l + 1, j)][(l, k)] == {"weight": Phi^(l+1)[k, j]}``.
            Every topic is a key (layer-1 topics have no children). It is
            networkx's adjacency format: ``networkx.DiGraph(graph)`` builds the
            directed tree, edges pointing down, with a ``weight`` attribute.

        Raises
        ------
        ValueError
            For a ``min_weight`` that is not a finite number.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        topic_words : the words to label each node with.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 6))
        >>> lda = DeepLDA(n_components=(3, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> graph = lda.topic_hierarchy()
        >>> sorted(graph[(2, 0)]), round(sum(e["weight"] for e in graph[(2, 0)].values()), 6)
        ([(1, 0), (1, 1), (1, 2)], 1.0)
        """
        check_is_fitted(self, "topics_")
        if (not isinstance(min_weight, numbers.Real) or isinstance(min_weight, bool)
                or not np.isfinite(min_weight)):
            raise ValueError(f"min_weight must be a finite number, got {min_weight!r}")
        return topic_graph(self.topics_, min_weight=float(min_weight))
