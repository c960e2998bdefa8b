"""The client's memory during a dask-array fit, and where its growth came from (issue 28).

A ``GaussianBernoulliRBM(8)`` fit of a dask array made on the workers (``--rows``
rows of 750 standard normals, blocks of 1,000 rows; one pass of minibatches of
``--batch-size``, so ``rows / batch`` updates), on two worker processes, four ways:

* the scheduler in the client's process (a ``LocalCluster``) or in a process of
  its own (a ``SubprocessCluster``, as on a real cluster);
* ``RowBlocks`` dropping its update-graph messages from the client's log of sent
  batches after each update (``skdgm._core.blocks.forget_sent``, the default) or
  not (the function replaced by a no-op: the behaviour before the fix).

For each: the client process's peak traced memory (``tracemalloc``) during
``fit``, its traced memory after the last update, and the growth per update
(the least-squares slope of the traced memory after each update, over the
updates after the 4th). The data's bytes, and the peak of the same measurement
of ``X.compute()`` (the data gathered), the control the memory tests use.

Usage (about 15 CPU-seconds over all processes)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_client_memory.py > benchmarks/results/dask_client_memory.txt
"""

import argparse
import os
import sys
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header  # noqa: E402


def _make_block(block_id, n_rows, d):
    return np.random.default_rng(block_id[0]).standard_normal((n_rows, d))


def _measure(cluster, fit):
    """Peak and per-update traced memory of ``fit()`` with a client of ``cluster``."""
    import distributed

    from skdgm._core import blocks

    after = []
    map_rows = blocks.RowBlocks.map_rows

    def counted(self, *args, **kwargs):
        out = map_rows(self, *args, **kwargs)
        after.append(tracemalloc.get_traced_memory()[0])
        return out

    with distributed.Client(cluster):
        blocks.RowBlocks.map_rows = counted
        tracemalloc.start()
        try:
            fit()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            blocks.RowBlocks.map_rows = map_rows
    tail = np.asarray(after[4:], dtype=float)
    slope = np.polyfit(np.arange(tail.size), tail, 1)[0] if tail.size > 2 else float("nan")
    return peak, after[-1], slope


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16_000)
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()
    header()

    import dask.array as da
    import distributed

    from skdgm import GaussianBernoulliRBM
    from skdgm._core import blocks

    d, rows = 750, 1_000
    Xd = da.map_blocks(_make_block, n_rows=rows, d=d,
                       chunks=((rows,) * (args.rows // rows), (d,)), dtype=np.float64)
    n_updates = args.rows // args.batch_size
    print(f"data: {args.rows} x {d} float64 = {Xd.nbytes / 1e6:.1f} MB in "
          f"{Xd.numblocks[0]} blocks; GaussianBernoulliRBM(8), batch {args.batch_size}, "
          f"{n_updates} updates; 2 worker processes, 1 thread each\n")
    print(f"{'scheduler':<22} {'client log':<12} {'peak MB':>8} {'end MB':>8} "
          f"{'KB/update':>10}")
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH")) if p)   # _make_block for the workers
    forget = blocks.forget_sent
    gathered = None
    for where in ("client's process", "own process"):
        make = (lambda: distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                                 processes=True, dashboard_address=None)
                ) if where == "client's process" else (
            lambda: distributed.SubprocessCluster(n_workers=2, threads_per_worker=1,
                                                  dashboard_address=None))
        with make() as cluster:
            cluster.wait_for_workers(2, timeout=60)
            for scrub in (False, True):
                blocks.forget_sent = forget if scrub else (lambda *a, **k: None)
                try:
                    est = GaussianBernoulliRBM(n_components=8, n_iter=1,
                                               batch_size=args.batch_size, cd_steps=1,
                                               random_state=0)
                    peak, end, slope = _measure(cluster, lambda: est.fit(Xd))
                finally:
                    blocks.forget_sent = forget
                assert est.n_updates_ == n_updates
                print(f"{where:<22} {'dropped' if scrub else 'kept':<12} {peak / 1e6:8.1f} "
                      f"{end / 1e6:8.1f} {slope / 1e3:10.1f}", flush=True)
            if where == "own process":
                with distributed.Client(cluster):
                    tracemalloc.start()
                    Xd.compute()
                    gathered = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
    print(f"\ncontrol: X.compute() through the same measurement (scheduler in its own "
          f"process): peak {gathered / 1e6:.1f} MB; limit of the tests: a quarter of the "
          f"data, {Xd.nbytes / 4e6:.1f} MB")


if __name__ == "__main__":
    main()
