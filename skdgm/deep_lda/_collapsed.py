"""The theta-collapsed layer-1 sampler: NumPy twins of :mod:`._collapsed_fast`.

With the globals fixed, ``theta_j^(1) ~ Gam(a_j, 1/c_j)`` (``a_j = Phi^(2)
theta_j^(2)``, or ``r`` with one layer) is conjugate to the Poisson counts it
explains, so the upward-downward sampler (Zhou et al., 2016a) can run on the
state ``(z, theta^(2:L), ...)`` with ``theta^(1)`` integrated out:

* each token's layer-1 topic is redrawn from ``phi[v, k] (n_jk^- + a_jk)``
  (:func:`collapsed_partition`), the Dirichlet-multinomial conditional that
  collapsed LDA samplers use (Griffiths and Steyvers, 2004), here with the
  topics fixed and a document-specific prior;
* everything above layer 1 is drawn as before: the CRT tables of ``n_jk``
  (Eq. 6) and ``p_j^(2)`` were already drawn with ``theta^(1)`` marginalised,
  and ``c^(l)``, ``theta^(l)``, ``l >= 2`` do not involve it;
* ``theta^(1)`` itself, ``Gam(a_jk + n_jk, 1/(c_j^(2) + 1))`` given the rest, is
  needed only as output: its conditional means go into the collected sums
  (Rao-Blackwellised) and one draw is returned as the chain's final state.

A sweep then costs the few topics a document holds per token, not ``K``, and no
gamma draws for ``theta^(1)``. A chain starts from explicit ``theta^(1)`` by
assigning every token from ``phi[v, k] theta_jk`` (:func:`assign_tokens`), a
Gibbs step of the uncollapsed model, so carried-over chains continue exactly.
The twins below make the same floating point operations on the same uniforms
as the kernels, one token at a time: references for the tests and
``kernels="numpy"``, not fast paths.
"""

import numpy as np

from . import _collapsed_fast

__all__ = ["assign_tokens", "collapsed_partition", "prior_totals", "rao_blackwell",
           "Layer1", "KERNELS"]


def _check(wptr, docs, counts, n_phi_rows, z, doc_topic, word_topic, word_rows, K, name):
    if (len(wptr) != n_phi_rows + 1 or doc_topic.shape[1] != K or len(docs) != len(counts)
            or wptr[-1] != len(counts)
            or (word_topic.shape[0] > 0 and word_topic.shape[1] != K)):
        raise ValueError(f"{name}: inconsistent shapes")
    if word_topic.shape[0] > 0:
        if word_rows is None:
            if word_topic.shape[0] != n_phi_rows:
                raise ValueError(f"{name}: inconsistent shapes")
        elif len(word_rows) != n_phi_rows:
            raise ValueError(f"{name}: inconsistent shapes")
        else:
            rows = np.asarray(word_rows)
            bad = np.flatnonzero((rows < 0) | (rows >= word_topic.shape[0]))
            if bad.size:
                raise ValueError(f"{name}: word row {bad[0]} points outside word_topic")
    pos = np.asarray(counts) > 0
    docs = np.asarray(docs)
    bad = np.flatnonzero(pos & ((docs < 0) | (docs >= doc_topic.shape[0])))
    if bad.size:
        raise ValueError(f"{name}: entry {bad[0]} points outside doc_topic")
    tokens = int(np.asarray(counts)[pos].sum())
    if tokens != len(z):
        raise ValueError(f"{name}: z has {len(z)} tokens, the counts {tokens}")


def _first_above(cum, u):
    """First ``k`` in ``[0, len(cum) - 1)`` with ``cum[k] > u``, else ``len(cum) - 1``."""
    return int(np.searchsorted(cum[:-1], u, side="right"))


def assign_tokens(wptr, docs, counts, phi, theta, rng, z, doc_topic, word_topic,
                  word_rows=None):
    """NumPy twin of :func:`._collapsed_fast.assign_tokens` (writes ``z``, adds counts)."""
    K = phi.shape[1]
    _check(wptr, docs, counts, phi.shape[0], z, doc_topic, word_topic, word_rows, K,
           "assign_tokens")
    if theta.shape != (doc_topic.shape[0], K):
        raise ValueError("assign_tokens: inconsistent shapes")
    if K == 0:
        return
    want_w = word_topic.shape[0] > 0
    t = 0
    for v in range(len(wptr) - 1):
        for p in range(wptr[v], wptr[v + 1]):
            n = int(counts[p])
            if n <= 0:
                continue
            j = int(docs[p])
            cum = np.cumsum(phi[v] * theta[j])
            acc = float(cum[-1])
            for _ in range(n):
                u = rng.random()
                k = _first_above(cum, u * acc) if acc > 0.0 else min(int(u * K), K - 1)
                z[t] = k
                doc_topic[j, k] += 1
                if want_w:
                    word_topic[v if word_rows is None else word_rows[v], k] += 1.0
                t += 1


def prior_totals(phi, a):
    """NumPy twin of :func:`._collapsed_fast.prior_totals`."""
    a = np.asarray(a, dtype=np.float64)
    if a.shape != (phi.shape[1],):
        raise ValueError("prior_totals: inconsistent shapes")
    if phi.shape[1] == 0:
        return np.zeros(phi.shape[0])
    return np.cumsum(phi * a, axis=1)[:, -1].copy()


def _draw_doc(w, lst, u):
    """The walk of the document bucket, with the kernel's fallback for rounding."""
    acc = 0.0
    i = 0
    while i < len(lst):
        acc = acc + w[lst[i]]
        if u < acc:
            return lst[i]
        i += 1
    i = len(lst) - 1
    while i > 0 and w[lst[i]] <= 0.0:
        i -= 1
    return lst[i]


def _draw_prior(pp, prior_j, K, u):
    """The kernel's walk of the prior bucket when the documents' priors differ:
    blocks of four, then the block that passes ``u`` term by term."""
    w = [float(a) * float(b) for a, b in zip(pp, prior_j)]
    acc = 0.0
    k = 0
    while k + 3 < K:
        blk = (w[k] + w[k + 1]) + (w[k + 2] + w[k + 3])
        if u < acc + blk:
            for i in range(3):
                acc = acc + w[k + i]
                if u < acc:
                    return k + i
            return k + 3
        acc = acc + blk
        k += 4
    while k < K:
        acc = acc + w[k]
        if u < acc:
            return k
        k += 1
    k = K - 1
    while k > 0 and w[k] <= 0.0:
        k -= 1
    return k


def collapsed_partition(wptr, docs, counts, phi, prior, prior_total, shared, rng, z,
                        doc_topic, word_topic, scratch=None, word_rows=None):
    """NumPy twin of :func:`._collapsed_fast.collapsed_partition` (updates in place;
    ``scratch`` is accepted and not needed)."""
    K = phi.shape[1]
    _check(wptr, docs, counts, phi.shape[0], z, doc_topic, word_topic, word_rows, K,
           "collapsed_partition")
    if prior.shape != doc_topic.shape or prior_total.shape != (
            phi.shape[0] if shared else len(counts),):
        raise ValueError("collapsed_partition: inconsistent shapes")
    if K == 0:
        return
    zz = np.asarray(z)
    if zz.size and (zz.min() < -1 or zz.max() >= K):
        bad = zz[(zz < -1) | (zz >= K)][0]
        raise ValueError(f"collapsed_partition: topic {bad} outside [-1, {K})")
    want_w = word_topic.shape[0] > 0
    lists = [[int(k) for k in np.flatnonzero(row > 0)] for row in doc_topic]
    t = 0
    s = 0.0
    for v in range(len(wptr) - 1):
        pp = phi[v]
        if shared:
            s = float(prior_total[v])
            row = None
        for p in range(wptr[v], wptr[v + 1]):
            n = int(counts[p])
            if n <= 0:
                continue
            j = int(docs[p])
            nrow = doc_topic[j]
            lst = [k for k in lists[j] if nrow[k] > 0]
            w = {}
            d = 0.0
            for k in lst:
                w[k] = float(pp[k]) * float(nrow[k])
                d = d + w[k]
            if not shared:
                s = float(prior_total[p])
            for _ in range(n):
                k = int(z[t])
                if k >= 0:
                    nrow[k] -= 1
                    b = float(pp[k]) * float(nrow[k])
                    d = d + (b - w[k])
                    w[k] = b
                u = rng.random() * (d + s)
                if u < d:
                    k = _draw_doc(w, lst, u)
                elif shared:
                    if row is None:
                        row = np.cumsum(pp * prior[0])
                    k = _first_above(row, u - d)
                else:
                    k = _draw_prior(pp, prior[j], K, u - d)
                nrow[k] += 1
                if k not in w:
                    lst.append(k)
                    w[k] = 0.0
                b = float(pp[k]) * float(nrow[k])
                d = d + (b - w[k])
                w[k] = b
                z[t] = k
                if want_w:
                    word_topic[v if word_rows is None else word_rows[v], k] += 1.0
                t += 1
            lists[j] = lst


def rao_blackwell(prior, counts, rate, theta_sum, theta_norm_sum):
    """NumPy twin of :func:`._collapsed_fast.rao_blackwell` (adds in place)."""
    if not (prior.shape == counts.shape == theta_sum.shape == theta_norm_sum.shape
            and rate.shape == (counts.shape[0],)):
        raise ValueError("rao_blackwell: inconsistent shapes")
    post = prior + counts
    theta_sum += post * (1.0 / rate)[:, None]
    if post.shape[1]:
        theta_norm_sum += post * (1.0 / np.cumsum(post, axis=1)[:, -1:])


class Layer1:
    """The collapsed layer-1 state of one chain: each token's topic and their counts.

    ``lay`` is the chunk's :class:`skdgm.deep_lda._local._Layout` (the tokens
    are kept in its words-by-documents order); ``shared`` the prior row every
    document shares (``r`` of a one-layer model), whose tables are then built
    once for all sweeps, or None (``Phi^(2) theta^(2)`` differs by document).
    ``doc_topic`` is ``x^(1)_{.kj}``, the counts the CRT and the ``theta^(1)``
    conditional read. ``entry_dots`` is the kernel set's
    :func:`skdgm.deep_lda._local.entry_dots`, which forms the prior bucket's
    per-entry totals when the documents' priors differ.
    """

    def __init__(self, lay, kernels, shared=None, word_rows=None, entry_dots=None):
        self.lay = lay
        self.kern = KERNELS[kernels]
        self.entry_dots = entry_dots
        self.word_rows = word_rows
        K = lay.Ks[0]
        self.z = np.zeros(int(lay.data_t[lay.data_t > 0].sum()), dtype=np.intc)
        self.doc_topic = np.zeros((lay.n, K), dtype=np.int64)
        self.shared = shared is not None
        self.total = (None if shared is None else
                      self.kern[3](lay.phi_words, np.asarray(shared, dtype=np.float64)))
        self.scratch = (np.empty((lay.n, K), dtype=np.intc),
                        np.empty((lay.n, K), dtype=np.int64))

    def start(self, theta1, rng, word_topic, prior=None):
        """Every token assigned given explicit ``theta^(1)`` (an uncollapsed step),
        or, with ``theta1=None``, drawn in turn given the tokens before it under
        the prior shapes ``prior`` (the sequential start of collapsed LDA)."""
        lay = self.lay
        self.doc_topic.fill(0)
        if theta1 is None:
            self.z.fill(-1)
            self.sweep(prior, rng, word_topic)
            return
        self.kern[0](lay.wptr, lay.wdocs, lay.data_t, lay.phi_words,
                     np.ascontiguousarray(theta1, dtype=np.float64), rng, self.z,
                     self.doc_topic, word_topic, self._rows(word_topic))

    def _rows(self, word_topic):
        return None if word_topic.shape[0] == 0 else self.word_rows

    def sweep(self, prior, rng, word_topic):
        """One collapsed sweep of every token under the prior shapes ``a`` (n, K)."""
        lay = self.lay
        total = self.total if self.shared else self.entry_dots(
            lay.wptr, lay.wdocs, np.ascontiguousarray(prior), lay.phi_words)
        self.kern[1](lay.wptr, lay.wdocs, lay.data_t, lay.phi_words, prior, total,
                     self.shared, rng, self.z, self.doc_topic, word_topic, self.scratch,
                     self._rows(word_topic))

    def collect(self, prior, rate, theta_sum, theta_norm_sum):
        """``theta^(1)``'s conditional means added to the collected sums."""
        self.kern[2](prior, self.doc_topic, rate, theta_sum, theta_norm_sum)


#: the two kernel sets
KERNELS = {
    "cython": (_collapsed_fast.assign_tokens, _collapsed_fast.collapsed_partition,
               _collapsed_fast.rao_blackwell, _collapsed_fast.prior_totals),
    "numpy": (assign_tokens, collapsed_partition, rao_blackwell, prior_totals),
}
