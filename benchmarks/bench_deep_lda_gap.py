"""Where does DeepLDA's default lose to its 4x run on 20 Newsgroups? (issue 25)

The default (``n_iter="auto"``) ends 1.5 % above the same estimator trained 4x longer
(``defaults_convergence_deep_lda.txt``). Candidate causes: too few burn-in passes,
too few or too correlated kept global samples (the 5 latest updates by default), too
few local sweeps when scoring, the step-size schedule. Two arms, each one process:

* ``--arm trace``: ``DeepLDA(random_state=0, n_iter=N)`` (``--passes``, default 164,
  the 4x run of ``defaults_convergence_deep_lda.txt``) on all 11,284 training
  documents; after the passes listed in ``--at`` the test perplexity of the 7,502 test
  documents under (a) the kept samples (what ``perplexity`` reads), (b) the last 5 and
  (c) the last 10 pass-end global samples (one per pass, the latest update of each),
  and, at the last two checkpoints, (d) the kept samples with 4x the local sweeps
  (``n_burn=20, n_samples=20``).
* ``--arm continue``: the default fit, then more passes (``--at``: after which) by ``partial_fit``
  over the rows the default trained on (its held-out slice left out), shuffled each
  pass (``total_samples`` those rows, so the step schedule and the scaling carry on).
  After each listed extra pass: (a), and the mean over the pass-end samples collected
  since the default ended (at most the last 10).

``--set NAME=VALUE`` changes hyper-parameters as in ``bench_defaults_convergence.py``.
Evaluating a list of samples swaps it in as the kept samples for one ``perplexity``
call (same seeds, same local sweeps), so figures differ only by the samples averaged.

Usage::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 5 python \\
        benchmarks/bench_deep_lda_gap.py --arm trace
    ... benchmarks/bench_deep_lda_gap.py --arm continue

Results: ``benchmarks/results/deep_lda_gap_trace.txt`` (``deep_lda_gap_continue.txt``
for the second arm, not yet run).
CPU seconds of this process, one BLAS thread.
"""

import argparse
import os
import sys
import time
import warnings
from collections import deque

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header, shown  # noqa: E402
from bench_defaults_convergence import _literal, load  # noqa: E402


def perplexity_under(est, test, samples=None, **kw):
    """Test perplexity under ``samples`` (default: the kept ones) and its CPU seconds."""
    kept = est._posterior
    if samples is not None:
        est._posterior = deque(samples)
    t = time.process_time()
    try:
        value = est.perplexity(*test, **kw)
    finally:
        est._posterior = kept
    return value, time.process_time() - t


def pass_end(est):
    """The global sample after a pass's last update, as a kept sample."""
    from skdgm.deep_lda._train import KeptSample

    return KeptSample([p.copy() for p in est.topics_], est.r_.copy())


def line(label, fit_s, value_rows):
    cells = "  ".join(f"{name} {v:8.2f}" for name, v in value_rows)
    print(f"{label:>10s} {fit_s:9.1f}  {cells}", flush=True)


def trace(est, X, test, at, passes):
    est.set_params(n_iter=passes)
    ends = deque(maxlen=10)
    cpu = {"fit": 0.0, "t": time.process_time()}
    one_pass, done = est._fit_pass, [0]
    deep = set(sorted(at)[-2:])

    def fit_pass(Xp, ctx):
        one_pass(Xp, ctx)
        done[0] += 1
        ends.append(pass_end(est))
        if done[0] not in at:
            return
        cpu["fit"] += time.process_time() - cpu["t"]
        rows = [("kept", perplexity_under(est, test)[0])]
        if len(ends) >= 5:
            rows.append(("last5", perplexity_under(est, test, list(ends)[-5:])[0]))
        if len(ends) >= 10:
            rows.append(("last10", perplexity_under(est, test, list(ends))[0]))
        if done[0] in deep:
            rows.append(("kept@20/20",
                         perplexity_under(est, test, n_burn=20, n_samples=20)[0]))
        line(f"pass {done[0]}", cpu["fit"], rows)
        cpu["t"] = time.process_time()

    est._fit_pass = fit_pass
    est.fit(X)


def continue_(est, X, test, at):
    t = time.process_time()
    est.fit(X)
    fit_s = time.process_time() - t
    print(f"# default: {est.n_iter_} passes, {est.stopping_reason_}", flush=True)
    line("default", fit_s, [("kept", perplexity_under(est, test)[0])])
    from skdgm._core.stopping import held_out_split
    from skdgm.deep_lda._defaults import validation_docs

    # the rows the default trained on (its held-out slice stays out)
    X = X[held_out_split(X.shape[0], validation_docs(X.shape[0], est.sampler),
                         est.random_state)[1]]
    rng = np.random.default_rng(1)
    est.set_params(total_samples=X.shape[0])
    ends = []
    for k in range(1, max(at) + 1):
        t = time.process_time()
        est.partial_fit(X[rng.permutation(X.shape[0])])
        fit_s += time.process_time() - t
        ends.append(pass_end(est))
        if k in at:
            rows = [("kept", perplexity_under(est, test)[0])]
            if k > 1:
                rows.append((f"mean{k}", perplexity_under(est, test, ends[-10:])[0]))
            line(f"+{k}", fit_s, rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arm", choices=("trace", "continue"), required=True)
    ap.add_argument("--passes", type=int, default=164, help="trace: passes of the fit (164)")
    ap.add_argument("--at", type=int, nargs="*", default=None,
                    help="trace: passes to score after (10 20 30 41 60 82 123 164); "
                         "continue: extra passes to score after (1 2 5 10)")
    ap.add_argument("--rows", type=int, default=0,
                    help="train on a random ROWS of the documents (0: all; a smoke test)")
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE")
    _common.add_data_home_arg(ap)
    args = ap.parse_args()
    home = _common.data_home(args.data_home)
    X, test, desc = load("DeepLDA", home, args.rows, 0)
    header([f"data: {shown(home)}", f"# DeepLDA: {desc}"])
    warnings.simplefilter("ignore")
    import skdgm

    params = {k: _literal(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    est = skdgm.DeepLDA(random_state=0, **params)
    print(f"{'after':>10s} {'fit CPU-s':>9s}  test perplexity under: kept = the kept "
          f"samples; lastN / meanN = the last N pass-end samples; @20/20 = 20 + 20 local "
          f"sweeps", flush=True)
    if args.arm == "trace":
        trace(est, X, test, set(args.at or (10, 20, 30, 41, 60, 82, 123, 164)), args.passes)
    else:
        continue_(est, X, test, set(args.at or (1, 2, 5, 10)))


if __name__ == "__main__":
    main()
