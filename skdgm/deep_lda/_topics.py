"""Reading a fitted deep LDA the way topic-model users do: words, coherence, the tree.

* :func:`top_words`: each topic's most probable words, the columns of
  ``Phi^(1) ... Phi^(l)`` (the layer's topics projected to the vocabulary);
* :func:`coherence`: per-topic coherence of those words on a reference corpus,
  from document frequencies and document co-occurrences;
* :func:`topic_graph`: the weighted bipartite graphs between adjacent layers,
  ``Phi^(l+1)[k, j]`` being the weight of lower topic ``k`` in upper topic ``j``
  (Cong et al. 2017, Eq. 1: ``theta^(l) ~ Gam(Phi^(l+1) theta^(l+1), ...)``).

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

import numpy as np
import scipy.sparse as sp

__all__ = ["COHERENCE_MEASURES", "EPSILON", "coherence", "top_words", "topic_graph"]

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
