"""CPU cost of streaming a data set through ``partial_fit`` against one ``fit`` pass.

Issue 14: for every estimator, streaming the rows of a data set through
``partial_fit`` in minibatches (one call per minibatch) should cost at most about
three times the CPU of one ``fit`` pass (``n_iter=1``) over the same rows with the
same ``batch_size``. The ratio is what a user pays for the streaming interface:
per-call validation, posterior draws, bookkeeping and anything a call computes
that a pass computes once.

For each estimator at small sizes the script measures, in one process, the CPU
seconds (``time.process_time``, best of ``--repeat``) of

* ``fit``: one pass over ``n`` rows (pre-training off where there is one, so that
  both sides run the same updates);
* ``stream``: a fresh estimator, then ``partial_fit`` on each consecutive minibatch
  of ``batch_size`` rows;

and prints their ratio. For ``DBMCAST`` it also times the stream with a score
read after every call (``score_after_each``), which is what every call cost
before ``log Z`` was made lazy: one AIS estimate per call.

Usage (under a minute of one core)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_streaming_cost.py \\
        --repeat 5 > benchmarks/results/streaming_cost.txt
"""

import argparse
import os
import sys
import warnings

import numpy as np

import skdgm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_timed, header  # noqa: E402


def datasets(n, seed=0):
    rng = np.random.default_rng(seed)
    # binary data with structure: 4 prototypes, 10 % of the bits flipped
    protos = rng.random((4, 32)) < 0.3
    binary = protos[rng.integers(0, 4, n)] ^ (rng.random((n, 32)) < 0.1)
    counts = rng.poisson(rng.gamma(0.3, 2.0, (n, 200)))
    counts[counts.sum(axis=1) == 0, 0] = 1
    return {
        "binary": binary.astype(np.float64),
        "counts": counts.astype(np.float64),
        "real": rng.standard_normal((n, 16)) @ rng.standard_normal((16, 16)),
    }


# (label, class, data key, parameters); fit gets n_iter=1 on top.
CASES = [
    ("GaussianBernoulliRBM", skdgm.GaussianBernoulliRBM, "real",
     dict(n_components=32, cd_steps=20, random_state=0)),
    ("BayesianSBN online_vb", skdgm.BayesianSBN, "binary",
     dict(n_components=(10,), inference="online_vb", n_posterior_samples=5,
          random_state=0)),
    ("BayesianSBN dsghmc_gibbs", skdgm.BayesianSBN, "binary",
     dict(n_components=(10,), inference="dsghmc_gibbs", n_posterior_samples=5,
          burn_in=0, random_state=0)),
    ("DeepLDA tlasgr", skdgm.DeepLDA, "counts",
     dict(n_components=(16, 8), local_burn_in=10, local_samples=5, random_state=0)),
    ("DBMCAST", skdgm.DBMCAST, "binary",
     dict(n_components=(20, 10), n_chains=50, n_temperatures=10, pretrain=False,
          random_state=0)),
]


def cpu(f, repeat):
    """Best of ``repeat`` CPU times: the least disturbed by the other jobs on the box."""
    return min(cpu_timed(f)[1] for _ in range(repeat))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="rows streamed (default 1000)")
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    data = datasets(args.n)
    B = args.batch_size
    header([f"n = {args.n} rows, batch_size = {B} ({-(-args.n // B)} partial_fit calls), "
            f"CPU seconds (process_time), best of {args.repeat}"])
    print(f"{'estimator':<28}{'fit 1 pass':>12}{'stream':>10}{'ratio':>8}", flush=True)
    for label, cls, key, params in CASES:
        X = data[key]

        def fit():
            cls(**params, n_iter=1, batch_size=B).fit(X)

        def stream(score_after_each=False):
            est = cls(**params, batch_size=B)
            for start in range(0, len(X), B):
                est.partial_fit(X[start:start + B])
                if score_after_each:
                    est.score(X[start:start + B])

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_fit = cpu(fit, args.repeat)
            t_stream = cpu(stream, args.repeat)
            rows = [(label, t_fit, t_stream)]
            if cls is skdgm.DBMCAST:
                t_scored = cpu(lambda: stream(True), 1)
                rows.append((label + " score_after_each", t_fit, t_scored))
        for lab, a, b in rows:
            print(f"{lab:<28}{a:>12.3f}{b:>10.3f}{b / a:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
