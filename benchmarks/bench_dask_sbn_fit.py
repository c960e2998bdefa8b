"""BayesianSBN online VB or DSGHMC on a dask array of 50,000 binarized-MNIST rows (issue 28).

The fixed binarized MNIST training split (50,000 x 784), fitted by a streaming
``BayesianSBN`` (``--inference``) with these settings:

* ``online_vb`` (the default): 50 hidden units, minibatches of 500 rows, one
  pass (``--n-iter``);
* ``dsghmc_nais`` or ``dsghmc_gibbs``: the settings ``inference="auto"`` picks
  at 50,000 rows (200 hidden units, minibatches of 100 rows, ``n_iter="auto"``
  with its ``burn_in`` and thinning rules), except that the run is cut to
  ``--updates`` minibatch updates (default 150, of the default's 2,000, at
  about 0.37 CPU-s each: ``AUTO_DSGHMC_UPDATES`` is set for the script's
  process), so that one run of three fits stays within ten minutes;

three ways in one run:

* in memory (the reference; CPU seconds and wall-clock);
* as a dask array of ``--blocks`` row blocks on a ``LocalCluster`` of one worker
  process, then of two (one thread each): wall-clock seconds of ``fit``
  (cluster start-up excluded; the blocks are sent from the client to the
  workers once, at the start of each fit and inside its time, and stay there:
  dask warns of the large graph; a cluster that loads its blocks itself skips
  that). Online VB: each minibatch's local step
  (``n_local_iter`` coordinate sweeps of the rows' ``q(H)``) runs on the workers
  holding its rows; the rows' ``q(H)`` and the visible layer's centred moment come
  back, and the global step runs on the client. DSGHMC: each of a minibatch's
  ``n_sghmc_steps`` SGHMC steps draws the rows' hidden samples on the workers
  holding them and brings back parameter-sized gradient sums; the SGHMC step
  runs on the client.

``--profile`` instead splits a DSGHMC step's wall time on 1 and on 2 workers
(``--n-rows`` 10,000 and ``--updates`` 10 by default there, one fit each, not
idle): the client's time inside the library's block calls (submitting, waiting,
fetching the sums) and between them (the SGHMC and Adam steps), the block tasks'
compute and the parameters' copy transfers from dask's task stream, the bytes
sent and returned per step, and the same block gradients computed in this
process, once under the malloc settings dask's nanny gives its workers
(``distributed.nanny.pre-spawn-environ``) and once without: the per-step
cost beyond the work named in numbers (``dask_sbn_fit_profile*.txt``).

The dask fits must equal each other bit for bit. Against the in-memory fit,
online VB's blocks' centred moments add in another order, a rounding that the
coordinate ascent carries along from step to step; DSGHMC's blocks draw from
their own streams, so its dask fit is another chain of the same sampler: the
script prints the largest parameter difference either way. Quality: the mean test ``log p(x)``
of the first ``--n-test`` test rows under each model (``score``; the default
``"stratified"`` estimator for 17-64 hidden units), in memory and from the
two-worker model. A wall-clock ratio is only meaningful on an idle host (this
project runs it under its CPU lock and its pauser of background runs).

Usage (about 5 minutes of one core for online VB; DSGHMC-NAIS about 9 minutes wall-clock on two
idle cores, 11 at ``--updates 200``)::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_sbn_fit.py > benchmarks/results/dask_sbn_fit.txt
    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_sbn_fit.py --inference dsghmc_nais \\
        > benchmarks/results/dask_sbn_fit_dsghmc_nais.txt
    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \
        python benchmarks/bench_dask_sbn_fit.py --inference dsghmc_nais --profile \
        > benchmarks/results/dask_sbn_fit_profile.txt
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header  # noqa: E402


def _params(est):
    return list(est.coefs_) + list(est.intercepts_)


def _fit(make, X):
    t, w = time.process_time(), time.perf_counter()
    est = make().fit(X)
    return est, time.process_time() - t, time.perf_counter() - w


def _malloc_env(env):
    """``(label, child environment)``: this process's, with ``env`` set (or unset)."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out.update({k: str(v) for k, v in env.items()})
    return out


_KERNEL = """
import pickle, sys, time
from skdgm._core.blocks import _on_slot, add_parts, split_tree
from skdgm.sbn._dsghmc import _block_gradient
leaves, shared, reps, slot = pickle.load(sys.stdin.buffer)
plan = split_tree([0] * len(leaves))[0][0]
def work():
    if slot:
        return _on_slot(_block_gradient, add_parts, leaves, shared, plan, True)
    return [_block_gradient(b[r], shared, e, c) for b, r, e, c in leaves]
work()
t = time.process_time()
for _ in range(reps):
    work()
print(1e3 * (time.process_time() - t) / reps)
"""


def _kernel_ms(leaves, shared, env, slot, reps=30):
    """CPU ms of one step's block gradients over ``leaves`` in a fresh process with
    the environment ``env`` (glibc reads its malloc settings at start): one after
    the other, or (``slot``) as the library's one task of a thread slot runs them."""
    import pickle
    import subprocess

    out = subprocess.run([sys.executable, "-c", _KERNEL], env=env, check=True,
                         input=pickle.dumps((leaves, shared, reps, slot)), capture_output=True)
    return float(out.stdout)


def _set_roomy(value):
    from skdgm._core import blocks

    blocks.ROOMY_MALLOC_BYTES = value


def profile(make, X, args):
    """Where a DSGHMC step's time goes on 1 and on 2 workers (``--profile``)."""
    import pickle

    import dask
    import dask.array as da
    import distributed

    from skdgm._core import blocks
    from skdgm.sbn import _dsghmc

    rows = -(-X.shape[0] // args.blocks)
    Xd = da.from_array(X, chunks=(rows, X.shape[1]))
    log, seen = [], {}
    orig_map, orig_block = blocks.RowBlocks._map, _dsghmc._block_gradient

    def timed_map(self, func, rows_, shared, *a, **k):
        t, c = time.perf_counter(), time.process_time()
        out = orig_map(self, func, rows_, shared, *a, **k)
        log.append({"enter": t, "exit": time.perf_counter(),
                    "cpu": time.process_time() - c,
                    "sent": len(pickle.dumps(shared, protocol=5))})
        if func is _dsghmc._block_gradient and "leaves" not in seen:
            # the step's rows, taken from the in-memory copy after the fits
            seen.update(shared=shared, dtype=self.dtype, leaves=[
                (np.arange(self.offsets[b], self.offsets[b + 1])[r], slice(None),
                 np.random.SeedSequence(i), None) for i, (b, r) in enumerate(self.split(rows_))])
        return out

    blocks.RowBlocks._map = timed_map
    print("## Profile: one DSGHMC fit on 1 and on 2 worker processes (not idle), per step")
    print(f"{X.shape[0]} rows, {args.blocks} blocks, {args.updates} updates")
    res = {}
    roomy = blocks.ROOMY_MALLOC_BYTES
    try:
        for w, on in ((1, False), (1, True), (2, True), (2, False)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cluster = distributed.LocalCluster(n_workers=w, threads_per_worker=1,
                                                   processes=True, dashboard_address=None)
            with cluster, distributed.Client(cluster) as client:
                client.wait_for_workers(w)
                client.run(_set_roomy, roomy if on else None)
                env = client.run(lambda: {k: v for k, v in os.environ.items()
                                          if k.startswith("MALLOC_")})
                log.clear()
                with distributed.get_task_stream(client) as ts:
                    t, c = time.perf_counter(), time.process_time()
                    make().fit(Xd)
                    wall, cpu = time.perf_counter() - t, time.process_time() - c
            steps = [u for u in log]
            n = len(steps)
            kinds = {}
            for rec in ts.data:
                kind = str(rec["key"]).split(blocks._TAG)[0]
                for s in rec["startstops"]:
                    kinds.setdefault((kind, s["action"]), []).append(s["stop"] - s["start"])
            per = {"wall": wall / n,
                   "in_map": sum(u["exit"] - u["enter"] for u in steps) / n,
                   "client_cpu_in_map": sum(u["cpu"] for u in steps) / n,
                   "between": sum(b["enter"] - a["exit"] for a, b in zip(steps, steps[1:]))
                   / max(1, n - 1),
                   "block_compute": sum(kinds.get(("_block_gradient", "compute"), [])) / n,
                   "copy_transfer": sum(kinds.get(("_identity", "transfer"), [])) / n,
                   "client_cpu": cpu / n}
            res[w, on] = per
            print(f"{w} worker(s), roomy_malloc {'on' if on else 'off'}: fit {wall:.1f} s wall, {n} steps; worker env "
                  f"{sorted(set(str(v) for v in env.values()))}")
    finally:
        blocks.RowBlocks._map = orig_map
    labels = [("wall", "fit wall per step (set-up included)"),
              ("in_map", "client inside the block call (submit, wait, fetch, add)"),
              ("client_cpu_in_map", "  of which client process CPU (with the scheduler)"),
              ("between", "client between block calls (SGHMC and Adam steps)"),
              ("block_compute", "block tasks' compute, summed over workers"),
              ("copy_transfer", "parameter copies' transfer to the second worker"),
              ("client_cpu", "client process CPU per step")]
    cols = [(1, False), (2, False), (1, True), (2, True)]
    print(f"\n{'ms per SGHMC step; roomy_malloc off (as before) | on':58s} "
          f"{'1 worker':>9s} {'2 workers':>9s} | {'1 worker':>9s} {'2 workers':>9s}")
    for k, label in labels:
        v = [f"{1e3 * res[c][k]:9.1f}" for c in cols]
        print(f"{label:58s} {v[0]} {v[1]} | {v[2]} {v[3]}")
    shared = seen["shared"]
    leaves = [(X[i].astype(seen["dtype"]), *rest) for i, *rest in seen["leaves"]]
    back = len(pickle.dumps(_dsghmc._block_gradient(leaves[0][0], shared, leaves[0][2],
                                                   None)[0], protocol=5))
    print(f"\nbytes per step: parameters sent {log[-1]['sent'] / 1e6:.2f} MB (once, then "
          f"copied to each other worker); each slot's sums returned {back / 1e6:.2f} MB")
    nanny = dask.config.get("distributed.nanny.pre-spawn-environ")
    malloc = {k: v for k, v in nanny.items() if k.startswith("MALLOC_")}
    print(f"one step's block gradients ({len(leaves)} blocks, {sum(lv[0].shape[0] for lv in leaves)} rows), one "
          f"task as on 1 worker, CPU ms in a fresh process (median of 3 runs of 30):")
    for label, env, slot in (("this process's malloc settings", {}, False),
                             (f"dask's nanny's {malloc}", malloc, False),
                             ("the same, as one slot task (under roomy_malloc)", malloc, True)):
        ms = sorted(_kernel_ms(leaves, shared, _malloc_env(env), slot) for _ in range(3))
        print(f"  {label:60s} {ms[1]:7.1f} ms")
    print(f"load average: {os.getloadavg()[0]:.2f} (2 cores)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inference", default="online_vb",
                        choices=["online_vb", "dsghmc_gibbs", "dsghmc_nais"])
    parser.add_argument("--n-components", type=int, default=None,
                        help="default: 50 for online_vb, 200 (the automatic width) for DSGHMC")
    parser.add_argument("--n-iter", type=int, default=1, help="online_vb: passes")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default: 500 for online_vb, 100 (the estimator's) for DSGHMC")
    parser.add_argument("--updates", type=int, default=150,
                        help="DSGHMC: minibatch updates of n_iter='auto' (the default's 2,000 cut)")
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--n-test", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-rows", type=int, default=None,
                        help="first rows of the training split only (a smoke run; "
                             "10,000 with --profile)")
    parser.add_argument("--profile", action="store_true",
                        help="DSGHMC: where a step's time goes on 1 and 2 workers "
                             "(--updates 10 unless given)")
    args = parser.parse_args()
    if args.profile:
        if "--updates" not in sys.argv:
            args.updates = 10
        if args.n_rows is None:
            args.n_rows = 10_000
    vb = args.inference == "online_vb"
    if args.n_components is None:
        args.n_components = 50 if vb else 200
    if args.batch_size is None:
        args.batch_size = 500 if vb else 100
    if vb:
        n_iter, run = args.n_iter, f"n_iter={args.n_iter}"
    else:
        # the default's run length, cut: n_iter="auto" counts this many updates
        from skdgm.sbn import _defaults
        _defaults.AUTO_DSGHMC_UPDATES = args.updates
        n_iter, run = "auto", f"n_iter='auto' cut to {args.updates} updates"
    header([f"BayesianSBN({args.n_components}, inference={args.inference!r}, {run}, "
            f"batch_size={args.batch_size}, random_state={args.seed}); {args.blocks} row "
            f"blocks; LocalCluster worker processes with 1 thread each; "
            f"test rows {args.n_test}"])

    import dask.array as da
    import distributed

    from skdgm import BayesianSBN
    from skdgm.datasets import fetch_binarized_mnist

    home = _common.data_home(None)
    X = fetch_binarized_mnist(data_home=home, subset="train").data[:args.n_rows]
    X = X.astype(np.float64)
    X_test = fetch_binarized_mnist(data_home=home, subset="test").data[:args.n_test]
    X_test = X_test.astype(np.float64)
    def make():
        return BayesianSBN(n_components=args.n_components, inference=args.inference,
                           n_iter=n_iter, batch_size=args.batch_size,
                           random_state=args.seed)

    if args.profile:
        return profile(make, X, args)
    rows = -(-X.shape[0] // args.blocks)
    Xd = da.from_array(X, chunks=(rows, X.shape[1]))
    print(f"data: {X.shape[0]} x {X.shape[1]} ({X.nbytes / 1e6:.0f} MB float64), "
          f"blocks of {rows} rows")

    mem, cpu, wall_mem = _fit(make, X)
    print(f"in memory          : fit {wall_mem:7.1f} s wall, {cpu:7.1f} CPU-s; n_iter_ "
          f"{mem.n_iter_}, burn_in_ {mem.burn_in_}", flush=True)
    fits = {}
    for n_workers in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # the dashboard's port notice
            cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                               processes=True, dashboard_address=None)
        with cluster, distributed.Client(cluster) as client:
            client.wait_for_workers(n_workers)
            est, cpu, wall = _fit(make, Xd)
        fits[n_workers] = (est, wall)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(_params(mem), _params(est)))
        print(f"dask, {n_workers} worker(s)  : fit {wall:7.1f} s wall, {cpu:7.1f} client "
              f"CPU-s; largest |parameter - in memory| {diff:.2e}", flush=True)
    same = all(np.array_equal(a, b) for a, b in zip(_params(fits[1][0]), _params(fits[2][0])))
    print(f"1 and 2 workers bit for bit: {same}")
    print(f"speed-up (wall): 2 workers vs 1 {fits[1][1] / fits[2][1]:.2f}x; "
          f"2 workers vs in memory {wall_mem / fits[2][1]:.2f}x")
    t = time.process_time()
    lp_mem = mem.score(X_test)
    lp_dsk = fits[2][0].score(X_test)
    print(f"test log p (mean over {args.n_test} rows): in memory {lp_mem:.3f}, dask 2 "
          f"workers {lp_dsk:.3f}, difference {lp_dsk - lp_mem:+.2e} "
          f"(scoring {time.process_time() - t:.1f} CPU-s)")


if __name__ == "__main__":
    main()
