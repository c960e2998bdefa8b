"""Document completion: the held-out-word estimator of Cong et al. (2017), Sec. 5.

Each test document's tokens are split into an observed part, from which its
local variables are sampled, and a held-out part, which is scored under the
document's predictive word distribution ``Phi^(1) theta^(1) / |theta^(1)|``
averaged over the collected local samples and the kept global samples.
The local sampler reaches this module as a callable, so that the estimator
decides where the chunks of documents run (:func:`skdgm._core.chains.run_chains`).
"""

import numpy as np
import scipy.sparse as sp

from ._bounds import jackknife_heldout

__all__ = ["PassLog", "document_scores", "heldout_loglik", "heldout_std", "pooled_score",
           "split_tokens"]


def heldout_loglik(X_obs, X_held, samples, heldout_rates, *, n_burn, n_collect, seed,
                   return_parts=False):
    """Per document: the log predictive probability of its held-out words, and their count.

    Sec. 5 protocol: the local variables are sampled from the observed words
    under each kept global sample in turn, the chains continuing from one
    global sample to the next (the paper's test chains run alongside
    training), so only the first sample pays the burn-in; the layer-1 Poisson
    rates ``Phi^(1) theta^(1)`` are accumulated over every collected sweep
    under every kept global sample, normalised per document and scored on the
    held-out words.

    Parameters
    ----------
    X_obs, X_held : CSR matrix of shape (n_docs, V)
        Observed and held-out counts of the same documents.
    samples : list of (phis, r)
        The kept global samples, oldest first.
    heldout_rates : callable
        ``heldout_rates(X, X_held, seed, samples, n_burn=, n_collect=)`` runs
        the local sampler (:func:`skdgm.deep_lda._local.samples_task` with
        ``what="heldout"``, through the estimator's chunks and workers) on the
        documents of ``X`` under every sample in turn and returns, per sample,
        ``(num, den)``: each held-out entry's rate ``Phi^(1) theta_sum`` (CSR
        order of ``X_held``) and each document's ``|theta_sum|``, ``theta_sum``
        its ``theta^(1)`` summed over the sample's collected sweeps. The
        workers form them, so the calling process only adds them up.
    n_burn, n_collect : int
        Sweeps discarded (under the first sample only) and collected under
        each sample.
    seed : numpy.random.SeedSequence
        The local chains' streams.
    return_parts : bool, default=False
        Also return each kept sample's accumulated rates.

    Returns
    -------
    loglik : ndarray of shape (n_docs,)
        ``sum_v x_held[j, v] log p_j(v)``.
    n_held : ndarray of shape (n_docs,)
        Held-out tokens per document.
    parts : tuple, only with ``return_parts=True``
        ``(num_parts, den_parts, rows, weights)``: per kept sample, the rates of
        every held-out entry and their per-document normalisers (arrays of
        shape ``(n_kept, n_entries)`` and ``(n_kept, n_docs)``), each entry's
        document and count (for :func:`skdgm.deep_lda._bounds.jackknife_heldout`).
    """
    n = X_obs.shape[0]
    Xh = sp.csr_matrix(X_held)
    rows = np.repeat(np.arange(n), np.diff(Xh.indptr))
    cols = Xh.indices
    num = np.zeros(cols.size)
    den = np.zeros(n)
    num_parts, den_parts = [], []
    rates = heldout_rates(X_obs, Xh, seed, samples, n_burn=n_burn, n_collect=n_collect)
    for num_s, den_s in rates:
        num += num_s
        den += den_s
        if return_parts:
            num_parts.append(num_s)
            den_parts.append(den_s)
    with np.errstate(divide="ignore"):
        logp = np.log(num / den[rows])
    ll = np.bincount(rows, weights=Xh.data * logp, minlength=n)
    cnt = np.asarray(Xh.sum(axis=1)).ravel()
    if return_parts:
        return ll, cnt, (np.array(num_parts), np.array(den_parts), rows, Xh.data)
    return ll, cnt


def split_tokens(X, fraction, rng):
    """Split every document's tokens: each held out with probability ``fraction``.

    Binomial thinning of each count, so that the held-out part of a document
    is a random ``fraction`` of its tokens.

    Returns
    -------
    observed, heldout : CSR matrix of shape X.shape
        ``observed + heldout == X``.
    """
    held = X.copy()
    held.data = rng.binomial(X.data.astype(np.int64), fraction).astype(np.float64)
    obs = X.copy()
    obs.data = X.data - held.data
    held.eliminate_zeros()
    obs.eliminate_zeros()
    return obs, held


class PassLog:
    """What one pass (or one ``partial_fit`` call) reports: the own-words
    log-likelihood of its minibatches under their collected local samples,
    and the step size and rates of its last update."""

    def __init__(self):
        self.loglik, self.n_words, self.eps, self.rates = 0.0, 0.0, float("nan"), []

    def add(self, loglik, n_words, eps, rates):
        self.loglik += loglik
        self.n_words += n_words
        self.eps, self.rates = eps, rates

    def perplexity(self):
        return float(np.exp(-self.loglik / self.n_words)) if self.n_words else float("nan")


def document_scores(ll, cnt):
    """Nats per held-out word of each document (0 for a document with none held out)."""
    return np.where(cnt > 0, ll / np.maximum(cnt, 1), 0.0)


def pooled_score(ll, cnt):
    """Nats per held-out word pooled over every held-out token."""
    return float(ll.sum() / max(cnt.sum(), 1))


def heldout_std(cnt, parts):
    """Jackknife standard errors of :func:`document_scores` and :func:`pooled_score`.

    ``parts`` is the fourth output of :func:`heldout_loglik` with ``return_parts``;
    the delete-one jackknife over the kept global samples
    (:func:`skdgm.deep_lda._bounds.jackknife_heldout`). A document with no held-out
    token gets 0.

    Returns
    -------
    doc_se : ndarray of shape (n_docs,)
    pooled_se : float
    """
    num_parts, den_parts, rows, weights = parts
    _, doc_se, _, pooled_se = jackknife_heldout(num_parts, den_parts, rows, weights, len(cnt))
    return np.where(cnt > 0, doc_se, 0.0), pooled_se
