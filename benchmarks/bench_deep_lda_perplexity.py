"""Per-held-out-word perplexity of DeepLDA on 20News (the paper's split), scaled down.

For each network size and global sampler: train on the 11,284 training
documents (minibatches of 200, or batch Gibbs sweeps), recording the point
perplexity (latest global sample only) on a fixed subset of test documents
against training CPU time (the paper's Fig. 1a), then the paper's Sec. 5
perplexity: local variables sampled from the ~80 % observed tokens of each test
document under each of the last ``--posterior-samples`` global samples, the
layer-1 Poisson rates averaged over all collected samples, normalised, and
scored on the ~20 % held-out tokens. ``--sklearn`` adds scikit-learn's
LatentDirichletAllocation (online and batch) under the same protocol (its
point estimate of the topics; document proportions from ``transform`` of the
observed part).

Output (stdout, redirected to a results file): the header of ``_common.py``,
progress lines, a table of the runs, then one ``record {...}`` JSON line per run,
which ``--plot FILE`` draws and ``--resume`` reads back (``--records``).

This is far shorter than the paper's schedule (2,000 burn-in + 1,500 collected
minibatches, 1,500 collected test samples); the defaults are sized so that one
(size, sampler) run takes a few minutes of one core.

Usage (``--quick``: 128 topics with every sampler, 128-64-32 with TLASGR, and
scikit-learn, about 5 CPU-minutes)::

    SKDGM_DATA=/path/to/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_deep_lda_perplexity.py --quick \\
        > benchmarks/results/deep_lda_perplexity.txt

The full table of ``doc/benchmarks/deep_lda.rst`` (about an hour of CPU) is one
command::

    python benchmarks/bench_deep_lda_perplexity.py --layers 128 128-64 128-64-32 \\
        --samplers tlasgr tlfsgr sgrld gibbs --sklearn

the test protocol's spread over seeds, each model also scored with a fresh test
chain per kept sample instead of the library's carried-over one (about 4
CPU-minutes)::

    python benchmarks/bench_deep_lda_perplexity.py --layers 128 \\
        --samplers tlasgr tlfsgr sgrld --seeds 0 1 2 --fresh-test-chains \\
        > benchmarks/results/deep_lda_test_protocol.txt

and the paper's full-length schedule (about 2 CPU-hours)::

    python benchmarks/bench_deep_lda_perplexity.py --layers 128-64-32 --samplers tlasgr \\
        --minibatches 3500 --learning-rate 0.2 --checkpoints 14 --test-docs 100000 \\
        --posterior-samples 30 --posterior-thin 50 --eval-at 1750
"""

import argparse
import json
from pathlib import Path
import time

import numpy as np

from skdgm import DeepLDA

from _common import RESULTS, add_data_home_arg, data_home, header, shown
from _deep_lda_data import load_20news

TXT = RESULTS / "deep_lda_perplexity.txt"
# --quick: (sizes, samplers) pairs run in this order, then scikit-learn
QUICK = [(["128"], ["tlasgr", "tlfsgr", "sgrld", "gibbs"]), (["128-64-32"], ["tlasgr"])]
RECORDS = []
PAPER = {  # Table 1, 20News
    ("tlasgr", "128-64-32"): 757, ("tlasgr", "128-64"): 758, ("tlasgr", "128"): 770,
    ("tlfsgr", "128-64-32"): 760, ("tlfsgr", "128-64"): 759, ("tlfsgr", "128"): 772,
    ("sgrld", "128-64-32"): 775, ("sgrld", "128-64"): 770, ("sgrld", "128"): 777,
    ("gibbs", "128-64-32"): 752, ("gibbs", "128-64"): 754, ("gibbs", "128"): 768,
}


def _append(record):
    RECORDS.append(record)


def read_records(path):
    """The ``record {...}`` lines of a results file written by this script."""
    with open(path) as f:
        return [json.loads(line[len("record "):]) for line in f if line.startswith("record ")]


def _table():
    print(f"\n{'model':11s} {'sampler':14s} {'size':>10s} {'seed':>4s} {'steps':>6s} "
          f"{'train CPU-s':>11s} {'perplexity':>10s} {'fresh ch.':>9s} {'final point':>11s} "
          f"{'eval CPU-s':>10s} {'paper':>6s}")
    for r in RECORDS:
        point = f"{r['curve'][-1][1]:.0f}" if r["curve"] else "-"
        ev = f"{r['eval_cpu']:.0f}" if r.get("eval_cpu") is not None else "-"
        fresh = f"{r['fresh_chains_perplexity']:.1f}" if r.get("fresh_chains_perplexity") else "-"
        print(f"{r['model']:11s} {r['sampler']:14s} {r['size']:>10s} {r.get('seed', 0):4d} "
              f"{r['steps']:6d} {r['train_cpu']:11.0f} {r['perplexity']:10.1f} {fresh:>9s} "
              f"{point:>11s} {ev:>10s} "
              f"{str(r.get('paper') or '-'):>6s}")
    print()
    for r in RECORDS:
        print("record " + json.dumps(r))


def _test_subset(obs, held, n, seed=0):
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(obs.shape[0], size=min(n, obs.shape[0]), replace=False))
    return obs[idx], held[idx]


def run_deep(Ks, sampler, args, X, obs, held, seed=0):
    name = "-".join(map(str, Ks))
    cobs, cheld = _test_subset(obs, held, args.curve_docs, seed=1)
    # the paper's local sweeps (20 L + 10 L per minibatch), not the library's defaults
    L = len(Ks)
    model = DeepLDA(Ks, sampler=sampler, total_samples=X.shape[0], learning_rate=args.learning_rate,
                    n_posterior_samples=args.posterior_samples,
                    posterior_thin=args.posterior_thin, random_state=seed, n_jobs=1,
                    local_burn_in=args.local_burn * L, local_samples=args.local_collect * L)
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    steps = args.gibbs_iters if sampler == "gibbs" else args.minibatches
    every = max(1, steps // args.checkpoints)
    curve, cpu, first = [], 0.0, 0
    order = []
    if args.resume:
        # Continue a run saved by --save-models (same sampler and size), e.g. with a
        # different posterior thinning for the collection phase.
        import joblib
        model = joblib.load(args.resume)
        if not hasattr(model, "posterior_thin"):   # saved before the option existed
            model.posterior_thin = 1
        model.set_params(n_posterior_samples=args.posterior_samples,
                         posterior_thin=args.posterior_thin)
        first = model._t
        label = sampler if args.learning_rate is None else f"{sampler} a={args.learning_rate}"
        records = read_records(args.records) if args.records.exists() else []
        prev = [r for r in records if r["model"] == "DeepLDA"
                and r["sampler"] == label and r["size"] == name and r["steps"] == first]
        if prev:
            curve, cpu = list(prev[-1]["curve"]), prev[-1]["train_cpu"]
        rng = np.random.default_rng(first)
        print(f"  resumed {args.resume} at step {first}, train CPU {cpu:.0f} s", flush=True)
    for t in range(first, steps):
        t0 = time.process_time()
        if sampler == "gibbs":
            model.partial_fit(X)
        else:
            if not order:
                # one global update per call: chunks of at most batch_size (200)
                # documents (57 of 197-198 for the 11,284 training documents)
                order = list(np.array_split(rng.permutation(n), -(-n // model.batch_size)))
            model.partial_fit(X[np.sort(order.pop())])
        cpu += time.process_time() - t0
        if (t + 1) % every == 0 or t + 1 == steps:
            pp = model.perplexity(cobs, cheld, point=True)
            curve.append((cpu, pp))
            print(f"  [{sampler} {name}] step {t + 1}/{steps}: train CPU {cpu:7.1f} s, "
                  f"point perplexity {pp:7.1f}", flush=True)
        if t + 1 == steps or t + 1 in args.eval_at:
            _evaluate(model, sampler, name, t + 1, cpu, curve, args, obs, held, seed)


def _fresh_chain_perplexity(model, obs, held, n_burn, n_collect):
    """The Sec. 5 estimator with a fresh local chain (and its burn-in) under every
    kept global sample, instead of the library's one chain carried over them (one
    stream per kept sample here, one per chunk there)."""
    from functools import partial

    from skdgm.deep_lda import _evaluate as ev

    local = partial(model._local, collect_topics=False)
    burn = n_burn

    def fresh(X, seed, samples, *, n_burn, n_collect):
        # a new chain, with its burn-in, under every kept sample
        sums = []
        for (phis, r), s in zip(samples, seed.spawn(len(samples))):
            res = local(X, s, phis, r, n_burn=burn, n_collect=n_collect, thetas=None)
            sums.append(np.vstack([part["theta_sum"][0] for part in res]))
        return sums

    ll, cnt = ev.heldout_loglik(obs, held, list(model._posterior), fresh, n_burn=n_burn,
                                n_collect=n_collect, seed=model._eval_seed(1))
    return float(np.exp(-ll.sum() / cnt.sum()))


def _evaluate(model, sampler, name, steps, cpu, curve, args, obs, held, seed=0):
    L = len(model.topics_)
    if args.save_models:
        # Kept so that a different test protocol can be run later without retraining.
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"deep_lda_{sampler}_{name}_{steps}.joblib"
        import joblib
        joblib.dump(model, path)
    t0, w0 = time.process_time(), time.perf_counter()
    jobs = model.n_jobs
    model.set_params(n_jobs=args.eval_jobs)   # results do not depend on n_jobs
    ppl = model.perplexity(obs, held, n_burn=args.test_burn * L, n_samples=args.test_collect * L)
    model.set_params(n_jobs=jobs)
    eval_cpu = time.process_time() - t0
    if args.eval_jobs not in (None, 1):
        eval_cpu = (time.perf_counter() - w0) * args.eval_jobs   # workers' CPU is not ours
    fresh = None
    if args.fresh_test_chains:
        fresh = _fresh_chain_perplexity(model, obs, held, args.test_burn * L,
                                        args.test_collect * L)
        print(f"  [{sampler} {name} seed {seed}] fresh test chain per kept sample: "
              f"perplexity {fresh:7.1f} (carried over: {ppl:7.1f})", flush=True)
    label = sampler if args.learning_rate is None else f"{sampler} a={args.learning_rate}"
    rec = dict(model="DeepLDA", sampler=label, size=name, steps=steps, train_cpu=cpu, seed=seed,
               fresh_chains_perplexity=fresh,
               perplexity=ppl, eval_cpu=eval_cpu, curve=list(curve), test_docs=obs.shape[0],
               posterior_samples=args.posterior_samples,
               posterior_thin=getattr(model, "posterior_thin", 1), test_burn=args.test_burn * L,
               test_collect=args.test_collect * L, paper=PAPER.get((sampler, name)))
    print(f"DeepLDA {sampler:>6} {name:>10} seed {seed}: perplexity {ppl:7.1f} "
          f"(paper {rec['paper']}), "
          f"{steps} steps, train CPU {cpu:.0f} s, test CPU {eval_cpu:.0f} s", flush=True)
    _append(rec)


def _lda_perplexity(lda, obs, held):
    theta = lda.transform(obs)
    topics = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    rows = np.repeat(np.arange(held.shape[0]), np.diff(held.indptr))
    p = np.einsum("ek,ek->e", theta[rows], topics[:, held.indices].T)
    return float(np.exp(-(held.data * np.log(p)).sum() / held.data.sum()))


def run_sklearn(args, X, obs, held):
    from sklearn.decomposition import LatentDirichletAllocation

    for method, kw in [("online", dict(learning_method="online", batch_size=200,
                                       max_iter=args.sklearn_online_epochs,
                                       total_samples=X.shape[0], doc_topic_prior=0.1,
                                       topic_word_prior=0.01)),
                       ("batch", dict(learning_method="batch", max_iter=args.sklearn_batch_iters))]:
        lda = LatentDirichletAllocation(n_components=128, random_state=0, **kw)
        t0 = time.process_time()
        lda.fit(X)
        cpu = time.process_time() - t0
        ppl = _lda_perplexity(lda, obs, held)
        print(f"sklearn LDA {method:>6} 128: perplexity {ppl:7.1f}, train CPU {cpu:.0f} s "
              f"({kw['max_iter']} passes)", flush=True)
        _append(dict(model="sklearn-LDA", sampler=method, size="128", steps=kw["max_iter"],
                     train_cpu=cpu, perplexity=ppl, test_docs=obs.shape[0], curve=[]))


def plot(path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = read_records(path)
    sizes = sorted({r["size"] for r in data if r["model"] == "DeepLDA"}, key=len)
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        for r in data:
            if (r["model"] == "DeepLDA" and r["size"] == size and r["curve"]
                    and " " not in r["sampler"]):
                c = np.array(r["curve"])
                ax.plot(c[:, 0], c[:, 1], marker="o", ms=3, label=r["sampler"])
        ax.set(title=f"20News, DeepLDA {size}", xlabel="training CPU time (s, one core)",
               ylabel="point perplexity")
        ax.legend()
    fig.tight_layout()
    out = RESULTS / "deep_lda_point_perplexity.png"
    fig.savefig(out, dpi=100)
    print(f"wrote {shown(out)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_home_arg(ap)
    ap.add_argument("--quick", action="store_true",
                    help="128 topics with every sampler, 128-64-32 with TLASGR, and "
                         "scikit-learn (about 5 CPU-minutes); ignores --layers/--samplers")
    ap.add_argument("--layers", nargs="*", default=[], help="e.g. 128 128-64 128-64-32")
    ap.add_argument("--samplers", nargs="*", default=["tlasgr"])
    ap.add_argument("--minibatches", type=int, default=200)
    ap.add_argument("--gibbs-iters", type=int, default=100)
    ap.add_argument("--learning-rate", type=float, default=None,
                    help="DeepLDA learning_rate (default: the sampler's own)")
    ap.add_argument("--test-docs", type=int, default=1500)
    ap.add_argument("--curve-docs", type=int, default=300)
    ap.add_argument("--checkpoints", type=int, default=8)
    ap.add_argument("--posterior-samples", type=int, default=5)
    ap.add_argument("--local-burn", type=int, default=20,
                    help="training local burn-in sweeps per layer (paper: 20)")
    ap.add_argument("--local-collect", type=int, default=10,
                    help="training local collected sweeps per layer (paper: 10)")
    ap.add_argument("--test-burn", type=int, default=20, help="per layer")
    ap.add_argument("--test-collect", type=int, default=10, help="per layer")
    ap.add_argument("--seeds", type=int, nargs="*", default=[0],
                    help="DeepLDA random_state and minibatch-order seed, one run each")
    ap.add_argument("--fresh-test-chains", action="store_true",
                    help="also score each model with a fresh test chain per kept sample")
    ap.add_argument("--sklearn", action="store_true")
    ap.add_argument("--sklearn-online-epochs", type=int, default=5)
    ap.add_argument("--sklearn-batch-iters", type=int, default=10)
    ap.add_argument("--plot", nargs="?", const=str(TXT), default=None, metavar="FILE",
                    help="plot the curves of a results file (default: %(const)s)")
    ap.add_argument("--records", default=str(TXT),
                    help="results file --resume reads the earlier curve from")
    ap.add_argument("--eval-at", type=int, nargs="*", default=[],
                    help="also run the full test protocol after these minibatches")
    ap.add_argument("--posterior-thin", type=int, default=1,
                    help="DeepLDA posterior_thin: keep every k-th global sample")
    ap.add_argument("--eval-jobs", type=int, default=1,
                    help="n_jobs for the test protocol only")
    ap.add_argument("--resume", default=None,
                    help="continue from a model saved by --save-models")
    ap.add_argument("--save-models", action="store_true",
                    help="joblib.dump the model at every evaluation (into results/)")
    args = ap.parse_args()
    if args.plot:
        return plot(args.plot)
    args.records = Path(args.records)
    home = data_home(args.data_home)
    header([f"data: {shown(home)} (skdgm.datasets.fetch_20newsgroups_bow)"])
    X, obs, held, _ = load_20news(home)
    obs, held = _test_subset(obs, held, args.test_docs)
    keep = np.asarray(held.sum(axis=1)).ravel() > 0
    obs, held = obs[keep], held[keep]
    print(f"train {X.shape[0]} docs; test subset {obs.shape[0]} docs, "
          f"{int(held.sum())} held-out tokens", flush=True)
    plan = QUICK if args.quick else [(args.layers, args.samplers)]
    for sizes, samplers in plan:
        for size in sizes:
            Ks = tuple(int(k) for k in size.split("-"))
            for sampler in samplers:
                for seed in args.seeds:
                    run_deep(Ks, sampler, args, X, obs, held, seed)
    if args.sklearn or args.quick:
        run_sklearn(args, X, obs, held)
    _table()


if __name__ == "__main__":
    main()
