"""Posterior-averaged features, Rao-Blackwellised imputation and their cost (issue 17).

Three sections, each short (one BLAS thread, CPU seconds of this process):

``features``
    The comparison of ``examples/plot_posterior_features.py`` over more seeds: a
    LogisticRegression in a Pipeline fed BayesianSBN features (12 hidden units,
    60 Gibbs iterations, binarised digits, a fixed stratified 60/40 split)
    averaged over 10 posterior samples, or from the last sample of the same chain
    alone. Accuracy, log-loss, multi-class Brier score and top-label ECE per seed,
    then the mean and standard deviation of the paired differences.
``rb_variance``
    On the small models of ``tests/test_impute.py``, the variance over 24 seeds of
    the Rao-Blackwellised imputation (average of conditional means) and of the
    average of the draws, on the same chains, summed over the missing entries.
``transform_cost``
    DeepLDA ``transform`` before this change (one call of the local sampler, the
    latest global sample) and now (one call per collected sweep, the kept global
    samples), timed side by side on a synthetic corpus; and GRBM / DBM ``transform``
    with 1 and 5 kept states.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_posterior.py \\
        [--only features rb_variance transform_cost] [--seeds 0 1 2 3 4]

Commit the output as ``benchmarks/results/posterior.txt``.
"""

import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from bench_defaults import cpu_timed, header  # noqa: E402


def features(seeds):
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, log_loss
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline

    from skdgm import BayesianSBN

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)

    def metrics(proba):
        onehot = np.eye(proba.shape[1])[yte]
        conf, correct = proba.max(1), proba.argmax(1) == yte
        bins = np.minimum((conf * 10).astype(int), 9)
        ece = sum(np.mean(bins == b) * abs(correct[bins == b].mean() - conf[bins == b].mean())
                  for b in range(10) if np.any(bins == b))
        return np.array([accuracy_score(yte, proba.argmax(1)), log_loss(yte, proba),
                         np.mean(np.sum((proba - onehot) ** 2, axis=1)), ece])

    print("## features: SBN (12,) Gibbs, n_iter=60, burn_in=20; LogisticRegression(max_iter=2000)")
    print(f"{'seed':>4s} {'features':12s} {'accuracy':>9s} {'log-loss':>9s} {'Brier':>9s} "
          f"{'ECE':>9s} {'CPU-s':>7s}")
    diffs = []
    for seed in seeds:
        rows = {}
        for name, n in (("averaged", 10), ("single", 1)):
            model = make_pipeline(
                BayesianSBN((12,), n_iter=60, burn_in=20, n_posterior_samples=n,
                            binarize=7.0, random_state=seed),
                LogisticRegression(max_iter=2000))
            (proba), cpu = cpu_timed(lambda: model.fit(Xtr, ytr).predict_proba(Xte))
            rows[name] = metrics(proba)
            print(f"{seed:4d} {name:12s} " + " ".join(f"{v:9.4f}" for v in rows[name])
                  + f" {cpu:7.1f}", flush=True)
        diffs.append(rows["averaged"] - rows["single"])
    d = np.array(diffs)
    print("averaged - single: mean " + " ".join(f"{v:+.4f}" for v in d.mean(0))
          + "  sd " + " ".join(f"{v:.4f}" for v in d.std(0, ddof=1))
          + f"  (over {len(d)} seeds; accuracy, log-loss, Brier, ECE)")
    print("seeds where averaged is better: accuracy "
          f"{int(np.sum(d[:, 0] > 0))}, log-loss {int(np.sum(d[:, 1] < 0))}, "
          f"Brier {int(np.sum(d[:, 2] < 0))}, ECE {int(np.sum(d[:, 3] < 0))} "
          f"of {len(d)}")
    print(flush=True)


def rb_variance():
    import test_impute as ti

    print("## rb_variance: variance over 24 seeds, summed over missing entries")
    print(f"{'model':10s} {'RB':>12s} {'draws':>12s} {'ratio':>8s}")
    for kind in ti.KINDS:
        run, _, _, missing = ti._case(kind)
        v_rb = ti._runs(run, True).var(0, ddof=1)[missing].sum()
        v_raw = ti._runs(run, False).var(0, ddof=1)[missing].sum()
        print(f"{kind:10s} {v_rb:12.3e} {v_raw:12.3e} {v_rb / v_raw:8.3f}", flush=True)
    print(flush=True)


def transform_cost():
    from skdgm import DBMCAST, DeepLDA, GaussianBernoulliRBM

    rng = np.random.default_rng(0)
    V, K, n = 2000, 32, 1400
    phi = rng.dirichlet(np.full(V, 0.05), K).T
    theta = rng.gamma(0.2, 20.0, size=(n, K))
    X = sp.csr_matrix(rng.poisson(theta @ phi.T).astype(float))
    m = DeepLDA(K, n_iter=2, batch_size=200, n_posterior_samples=5, random_state=0).fit(X[:400])
    Xt = X[400:]
    burn, coll = m._sweeps()

    def before():
        st = m._merge(m._local(Xt, m._eval_seed(0), m.topics_, m.r_, n_burn=burn,
                               n_collect=coll, collect_topics=False))
        return st["theta_norm_sum"][0] / st["n_collect"]

    print(f"## transform_cost: DeepLDA K={K}, V={V}, {Xt.shape[0]} documents, "
          f"{Xt.nnz} non-zeros, burn {burn} + collect {coll} sweeps")
    reps = 3
    t_before = min(cpu_timed(before)[1] for _ in range(reps))
    m.set_params(n_posterior_samples=5)
    t_now5 = min(cpu_timed(lambda: m.transform(Xt, return_std=True))[1] for _ in range(reps))
    one = list(m._posterior)[-1:]
    saved = m._posterior
    m._posterior = type(saved)(one, maxlen=1)
    t_now1 = min(cpu_timed(lambda: m.transform(Xt))[1] for _ in range(reps))
    m._posterior = saved
    print(f"before (one call, latest sample)       {t_before:7.3f} CPU-s  1.00x")
    print(f"now, 1 kept sample (one call per sweep) {t_now1:7.3f} CPU-s  "
          f"{t_now1 / t_before:.2f}x")
    print(f"now, 5 kept samples, return_std         {t_now5:7.3f} CPU-s  "
          f"{t_now5 / t_before:.2f}x")

    Xg = rng.standard_normal((2000, 64))
    for name, make, data in (
            ("GRBM 64x256", lambda k: GaussianBernoulliRBM(n_iter=5, n_posterior_samples=k,
                                                           random_state=0), Xg),
            ("DBM 64-(16,32)", lambda k: DBMCAST(n_iter=5, n_posterior_samples=k,
                                                 random_state=0), (Xg > 0).astype(float))):
        e1, e5 = make(1).fit(data), make(5).fit(data)
        t1 = min(cpu_timed(e1.transform, data)[1] for _ in range(reps))
        t5 = min(cpu_timed(lambda: e5.transform(data, return_std=True))[1] for _ in range(reps))
        print(f"{name:16s} transform, 1 state {t1:7.3f} CPU-s; 5 states + std {t5:7.3f} CPU-s "
              f"({t5 / t1:.2f}x)", flush=True)
    print(flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=["features", "rb_variance", "transform_cost"])
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2, 3, 4])
    args = ap.parse_args()
    header()
    t0 = time.process_time()
    if "features" in args.only:
        features(args.seeds)
    if "rb_variance" in args.only:
        rb_variance()
    if "transform_cost" in args.only:
        transform_cost()
    print(f"# total CPU: {time.process_time() - t0:.1f} s")


if __name__ == "__main__":
    main()
