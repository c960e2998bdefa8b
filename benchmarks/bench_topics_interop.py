"""The figures behind issue 27: coherence against gensim, tiny gamma scales, runaway steps.

Four measurements, each against an exact answer or a peer in the same run:

1. ``coherence``: ``DeepLDA.coherence(measure="u_mass")`` against gensim's
   ``CoherenceModel(coherence="u_mass")`` on the same top words and corpus (a
   DeepLDA 32-8-4 fitted for 8 passes on 1,000 documents of 20 Newsgroups, every
   layer, 10 words per topic): the largest absolute difference, and the CPU
   seconds of both (skipped without gensim; ``pip install gensim``).
2. ``gamma_underflow``: the fraction of ``Gam(e0, 1)`` draws that are exactly 0 in
   double precision (1,000,000 draws per ``e0``), against the approximation
   ``tiny ** e0`` (``tiny`` the smallest positive double): why
   ``DeepLDA.sample`` floors the scales ``c``.
3. ``dbm_steps`` and ``sbn_steps``: for ``DBMCAST`` (200 binary rows, 16 features,
   sizes 8-6, 5 passes) and ``BayesianSBN(inference="dsghmc_gibbs")`` (binarised
   digits, 10 hidden units, 3 passes) at learning rates from 0.01 to 1e6, the
   growth rule not applied while measuring: the largest per-update step relative
   to the larger of the parameters' previous magnitude and 1, and the largest
   weight at the end: the margin of the ``DIVERGENCE_GROWTH = 100`` rule.
4. ``diagnostics``: ``skdgm._core.diagnostics`` against ``arviz_stats`` (``rhat``,
   ``ess`` bulk / tail / mean, split R-hat) on 200 random AR(1) traces: the largest
   relative difference (skipped without arviz-stats).

Usage (a few minutes of one core)::

    SKDGM_DATA=<data folder> OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python \\
        benchmarks/bench_topics_interop.py > benchmarks/results/topics_interop.txt
"""

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_data_home_arg, cpu_timed, data_home, header, shown  # noqa: E402


def coherence(args):
    print("## coherence: DeepLDA u_mass vs gensim CoherenceModel(coherence='u_mass')")
    try:
        from gensim.corpora import Dictionary
        from gensim.models.coherencemodel import CoherenceModel
    except ImportError:
        print("gensim not installed: skipped (pip install gensim)\n")
        return
    from skdgm import DeepLDA
    from skdgm.datasets import fetch_20newsgroups_bow

    try:
        news = fetch_20newsgroups_bow(data_home=data_home(args.data_home),
                                      download_if_missing=False)
    except OSError as exc:
        print(f"20news_2000.npz not found ({exc}): skipped\n")
        return
    rng = np.random.default_rng(0)
    X = news.train[np.sort(rng.choice(news.train.shape[0], 1000, replace=False))]
    model = DeepLDA(n_components=(32, 8, 4), n_iter=8, random_state=0).fit(X)
    vocab = [str(w) for w in news.vocabulary]
    dictionary = Dictionary([vocab])
    ids = [dictionary.token2id[w] for w in vocab]
    Xc = X.tocsr()
    corpus = [[(ids[v], int(c)) for v, c in zip(Xc.indices[Xc.indptr[i]:Xc.indptr[i + 1]],
                                                Xc.data[Xc.indptr[i]:Xc.indptr[i + 1]])]
              for i in range(Xc.shape[0])]
    print(f"corpus: {X.shape[0]} documents, {X.shape[1]} words; model 32-8-4, 8 passes")
    print(f"{'layer':>5} {'topics':>6} {'max |ours - gensim|':>20} {'ours CPU-s':>11} "
          f"{'gensim CPU-s':>13} {'mean u_mass':>12}")
    for layer in (1, 2, 3):
        words = model.topic_words(10, layer=layer, feature_names=np.array(vocab))
        ours, t_ours = cpu_timed(model.coherence, X, n_words=10, layer=layer)

        def gensim_scores():
            cm = CoherenceModel(topics=[list(t) for t in words], corpus=corpus,
                                dictionary=dictionary, coherence="u_mass", topn=10)
            return np.array(cm.get_coherence_per_topic())

        theirs, t_theirs = cpu_timed(gensim_scores)
        print(f"{layer:>5} {len(ours):>6} {np.max(np.abs(ours - theirs)):>20.3g} "
              f"{t_ours:>11.3f} {t_theirs:>13.3f} {np.mean(ours):>12.4f}")
    print()


def gamma_underflow():
    print("## gamma_underflow: P(Gam(e0, 1) draw == 0.0) over 1,000,000 draws")
    rng = np.random.default_rng(0)
    tiny = np.finfo(np.float64).tiny
    print(f"{'e0':>8} {'fraction 0':>11} {'tiny**e0':>10}")
    for e0 in (1.0, 0.1, 0.01, 0.001, 1e-300):
        zero = float(np.mean(rng.gamma(e0, 1.0, size=1_000_000) == 0.0))
        print(f"{e0:>8.3g} {zero:>11.5f} {tiny ** e0:>10.3g}")
    print()


def _step_ratios(module, fit_at):
    """Largest per-update step / max(previous magnitude, 1) of ``fit_at(lr)`` per rate.

    ``module.check_finite_params`` is replaced for the measurement by one that
    records the ratio and applies only the absolute checks (not the growth rule).
    """
    real = module.check_finite_params
    record = []

    def measuring(params, where, *, bound=None, previous=None):
        if previous is not None:
            for name, arrays in params.items():
                for a, b in zip(arrays, previous[name]):
                    step = float(np.max(np.abs(a - b)))
                    record.append(step / max(float(np.max(np.abs(b))), 1.0))
        return real(params, where, bound=bound)

    print(f"{'learning_rate':>13} {'largest step ratio':>19} {'final max |W|':>14}")
    module.check_finite_params = measuring
    try:
        for lr in (0.01, 0.05, 1.0, 10.0, 1e3, 1e6):
            record.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = fit_at(lr)
            big = max(float(np.max(np.abs(W))) for W in est.coefs_)
            print(f"{lr:>13.3g} {max(record):>19.3g} {big:>14.4g}")
    finally:
        module.check_finite_params = real
    print()


def dbm_steps():
    print("## dbm_steps: DBMCAST per-update step / max(previous max |param|, 1)")
    import skdgm.dbm._train as dbm_train
    from skdgm import DBMCAST

    X = (np.random.default_rng(0).random((200, 16)) < 0.3).astype(float)
    _step_ratios(dbm_train, lambda lr: DBMCAST(n_components=(8, 6), n_iter=5,
                                               learning_rate=lr, random_state=0).fit(X))


def sbn_steps():
    print("## sbn_steps: BayesianSBN DSGHMC (Gibbs proposal) per-step ratio, as dbm_steps")
    from sklearn.datasets import load_digits

    import skdgm.sbn._dsghmc as sbn_dsghmc
    from skdgm import BayesianSBN

    X = (load_digits().data > 7).astype(float)
    print(f"binarised digits {X.shape[0]} x {X.shape[1]}, 10 hidden units, 3 passes")
    _step_ratios(sbn_dsghmc, lambda lr: BayesianSBN(
        n_components=(10,), inference="dsghmc_gibbs", n_iter=3, learning_rate=lr,
        random_state=0).fit(X))


def diagnostics():
    print("## diagnostics: skdgm._core.diagnostics vs arviz_stats, 200 AR(1) traces")
    try:
        import arviz_stats as azs
        azs.rhat
    except (ImportError, AttributeError):
        print("arviz-stats (with its xarray extra) not installed: skipped\n")
        return
    from skdgm._core import diagnostics as d

    rng = np.random.default_rng(0)
    worst = {}
    for _ in range(200):
        m, n = int(rng.integers(1, 5)), int(rng.integers(4, 300))
        rho = rng.uniform(-0.5, 0.99)
        x = np.empty((m, n))
        x[:, 0] = rng.standard_normal(m)
        for t in range(1, n):
            x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.standard_normal(m)
        if rng.random() < 0.3:
            x = np.round(x)
        pairs = {"ess_bulk": (d.ess_bulk(x), azs.ess(x)),
                 "ess_tail": (d.ess_tail(x), azs.ess(x, method="tail", prob=(0.05, 0.95))),
                 "ess_mean": (d.effective_sample_size(x), azs.ess(x, method="mean"))}
        if m > 1:
            pairs["rhat"] = (d.rhat(x), azs.rhat(x))
            pairs["split_rhat"] = (d.split_rhat(x), azs.rhat(x, method="split"))
        for k, (a, b) in pairs.items():
            worst[k] = max(worst.get(k, 0.0), abs(a - b) / abs(b))
    for k, v in worst.items():
        print(f"{k:>10}: largest relative difference {v:.3g}")
    print()


def main():
    parser = add_data_home_arg(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    args = parser.parse_args()
    header([f"data: {shown(data_home(args.data_home))}"])
    coherence(args)
    gamma_underflow()
    dbm_steps()
    sbn_steps()
    diagnostics()


if __name__ == "__main__":
    main()
