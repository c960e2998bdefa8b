"""Error bars for DeepLDA's held-out score, and why it has no sandwich bounds.

The score (Cong et al. 2017, Sec. 5) is the log predictive probability of held-out
words given the observed ones, ``log (sum_s num_s / sum_s den_s)`` per held-out
token: the layer-1 rates ``Phi^(1) theta^(1)`` accumulated over the collected
local sweeps under each kept global sample ``s`` (``num_s`` at the token's word,
``den_s`` summed over words). Its Monte-Carlo error comes from the finite number
of global samples and local sweeps. :func:`jackknife_heldout` estimates it by the
delete-one jackknife over the global samples, each sample's accumulated sweeps
being one block. The local chains carry over from one global sample to the next,
so the blocks are consecutive segments of one chain per document: the jackknife
is then a batch-means estimate, and it underestimates the error when the chains
mix slowly over the ``local_samples`` sweeps of a block.

No BDMC bounds: the PGBN is directed, so ancestral sampling does give exact pairs
``(x, theta)`` and the reverse chain could start from them. What is missing is the
transition: AIS on the path ``p(theta) p(x | theta)^beta`` needs Markov moves that
leave the *tempered* posterior invariant, and the upward-downward Gibbs sampler
of :mod:`skdgm.deep_lda._local` (Zhou et al. 2016a, as Alg. 1 of Cong et al.
2017 uses it) relies on partitioning the Poisson counts over the topics
(multinomial) and on Chinese-restaurant-table counts (Eq. 6), augmentations that
exist only at ``beta = 1``: ``Pois(x; lambda)^beta`` is not a Poisson likelihood
in ``lambda`` for integer data. A
valid tempered sampler (e.g. Metropolis-Hastings on ``log theta``, or annealing
the data by thinning the counts) would be a new kernel with its own tests, and
its ``log p(x)`` would still not be the document-completion score the estimator
reports; so DeepLDA offers the score's standard error only.
"""

import numpy as np

__all__ = ["jackknife_heldout"]


def jackknife_heldout(num_parts, den_parts, rows, weights, n_docs):
    """Held-out log-likelihoods and their delete-one jackknife standard errors.

    Parameters
    ----------
    num_parts : ndarray of shape (S, n_tokens)
        Per global sample ``s`` and held-out (document, word) entry, the
        accumulated layer-1 rate at that word.
    den_parts : ndarray of shape (S, n_docs)
        Per global sample, the accumulated total rate of each document.
    rows : ndarray of int of shape (n_tokens,)
        The document of every entry.
    weights : ndarray of shape (n_tokens,)
        The held-out count of every entry.
    n_docs : int

    Returns
    -------
    per_doc : ndarray of shape (n_docs,)
        Mean log predictive probability per held-out token of each document (0
        for documents with no held-out token).
    per_doc_se : ndarray of shape (n_docs,)
        Its jackknife standard error (NaN with fewer than two global samples).
    pooled, pooled_se : float
        The per-token mean pooled over all documents, and its standard error.
    """
    num_parts = np.asarray(num_parts, dtype=float)
    den_parts = np.asarray(den_parts, dtype=float)
    S = num_parts.shape[0]
    cnt = np.bincount(rows, weights=weights, minlength=n_docs)
    total = max(float(cnt.sum()), 1.0)

    def scores(num, den):
        with np.errstate(divide="ignore"):
            logp = np.log(num / den[rows])
        ll = np.bincount(rows, weights=weights * logp, minlength=n_docs)
        return np.where(cnt > 0, ll / np.maximum(cnt, 1), 0.0), ll.sum() / total

    num, den = num_parts.sum(axis=0), den_parts.sum(axis=0)
    per_doc, pooled = scores(num, den)
    if S < 2:
        return per_doc, np.full(n_docs, np.nan), float(pooled), float("nan")
    loo = [scores(num - num_parts[s], den - den_parts[s]) for s in range(S)]
    loo_doc = np.array([d for d, _ in loo])
    loo_pool = np.array([p for _, p in loo])
    c = (S - 1) / S
    per_doc_se = np.sqrt(c * np.sum((loo_doc - loo_doc.mean(axis=0)) ** 2, axis=0))
    pooled_se = float(np.sqrt(c * np.sum((loo_pool - loo_pool.mean()) ** 2)))
    return per_doc, per_doc_se, float(pooled), pooled_se
