"""DeepLDA's local runs as the estimator calls them (mixed into :class:`~skdgm.DeepLDA`).

Every local sampling of the model (training minibatches, ``transform``, scores,
``impute``) goes through these methods, which add the model's priors, the fixed
chunking and ``n_jobs`` to the module-level kernels of :mod:`._train`.
"""

import numpy as np

from . import _train
from ._impute import impute_over_samples
from ._local import merge_chunks

__all__ = ["CHUNK_DOCS", "LocalRuns"]

# Documents per local-sampler task. Fixed (never derived from n_jobs) so that the
# streams, and so the results, are the same for every n_jobs and joblib backend.
# Each sweep of a chunk pays some NumPy calls whatever its size, so larger chunks
# run the public transform faster (bench_deep_lda_public.py compares chunk sizes),
# and the 20 Newsgroups training set still makes 29 tasks for the workers.
CHUNK_DOCS = 400


class LocalRuns:
    """The local-run hooks of :class:`~skdgm.DeepLDA` (priors, chunks, ``n_jobs``)."""

    def _local_priors(self):
        """The priors and chunking every local run of this model shares."""
        return dict(a0=self.a0, b0=self.b0, e0=self.e0, f0=self.f0, link=self.link,
                    chunk_docs=CHUNK_DOCS)

    def _local(self, X, seed_seq, phis, r, *, n_burn, n_collect, collect_topics,
               thetas=None, keep_theta=True, side=None):
        """Upward-downward sampling of every document, in fixed chunks through run_chains
        (``side``: the global step's normals, drawn beside them, see ``run_local``)."""
        return _train.run_local(X, seed_seq, phis, r, n_burn=n_burn, n_collect=n_collect,
                                collect_topics=collect_topics, n_jobs=self.n_jobs,
                                thetas=thetas, keep_theta=keep_theta, side=side,
                                **self._local_priors())

    def _minibatches(self, X, order_rng=None):
        """The minibatches of a training pass (:func:`._train.minibatches`), the next
        one laid out during each update's global step when the local steps run on
        thread workers (:class:`._train.MinibatchPipeline`)."""
        ahead = _train.look_ahead(self.n_jobs, chunk_docs=CHUNK_DOCS, link=self.link,
                                  Ks=[t.shape[1] for t in self.topics_],
                                  n_sweeps=sum(self._sweeps()))
        return _train.minibatches(X, self.batch_size, order_rng, look_ahead=ahead)

    def _impute(self, X, missing, seed_seq, n_sweeps):
        """``X`` filled with ``impute``'s estimates: one task per chunk for every sweep
        and kept sample."""
        return impute_over_samples(X, missing, self.posterior_samples_, seed_seq,
                                   n_sweeps=n_sweeps, n_jobs=self.n_jobs,
                                   **self._local_priors())

    def _merge(self, results, stack_theta=True):
        return merge_chunks(results, self.n_features_in_, stack_theta=stack_theta,
                            n_jobs=self.n_jobs)

    def _over_samples(self, X, seed_seq, samples, *, n_burn, n_collect, what):
        """Each chunk's chain carried over the kept global samples, one task per chunk."""
        return _train.run_over_samples(X, seed_seq, samples, n_burn=n_burn, n_collect=n_collect,
                                       what=what, n_jobs=self.n_jobs, **self._local_priors())

    def _heldout_rates(self, X, X_held, seed_seq, samples, *, n_burn, n_collect):
        """Per kept sample, ``(num, den)``: every held-out entry's rate under the
        documents' collected ``theta^(1)`` sums and those sums' totals, formed by the
        chunks' tasks (``samples_task(what="heldout")``) and joined in chunk order."""
        parts = _train.run_over_samples(X, seed_seq, samples, n_burn=n_burn,
                                        n_collect=n_collect, what="heldout", n_jobs=self.n_jobs,
                                        held=X_held, **self._local_priors())
        return [tuple(np.concatenate([p[i][j] for p in parts]) for j in range(2))
                for i in range(len(samples))]
