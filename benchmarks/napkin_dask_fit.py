"""A paper-on-napkin estimate of DeepLDA on 64 Dask workers and 10M documents (issue 28).

Reads the constants that ``bench_dask_fit.py`` measured (``--results``, by default
``results/dask_fit_speed_idle5.txt``: the local step's CPU per document, the client's
global step per update, the bytes of the global parameters, of one block's
statistics and of the tree's total of 4 blocks, the round trip of an empty task)
and prices one pass over ``--docs`` documents with ``--workers`` workers, each
sampling ``--per-worker`` documents per update, against one core alone in
minibatches of 200. Assumptions, printed with the result: every link carries
``--bandwidth`` bytes per second; the global parameters go once per update from the
client through the scheduler to one worker (a task of their own, so that a lost
worker's copy is recomputed), and reach the other workers by a tree of copy tasks
(``RowBlocks._share``: every level, each worker holding a copy hands one to a
worker without, ``ceil(log2(workers))`` levels, each one transfer per link in
parallel and one task round trip); the layout before the copies (every other
worker fetching them from that one worker, one after the other on its link) is
printed beside it. A worker's local step is the measured one-core figure. The blocks' statistics are summed by a tree of pairwise tasks on the
workers (``ceil(log2(workers))`` levels, each moving one array over a link, the
pairs of a level in parallel, each level priced one task round trip too), and the
client receives the total alone: the tree's total of 4 blocks, on the union of
their words, stands for any number (with this vocabulary it is all the words
already). The flat layout the estimators used before the tree (every block's
statistics to the client, one after the other on its link) is printed beside it.

What one update costs besides the workers' sampling, whatever the levels, is
the measured one: ``--profile`` (by default
``results/dask_fit_profile_slots.txt``, ``bench_dask_fit.py --profile`` after
the library sent one task per worker thread and update) gives the seconds per
fit that no worker shortens on 1 worker (the client's global step and next
minibatch, submitting, the parameters' hop to the worker, the results' return;
its fit's wall-clock minus its block tasks' span), divided by the fit's
updates: that replaces the empty task's round trip plus the global step as the
update's fixed price (an empty task's round trip prices only each tree level,
then). The earlier pricing (round trip plus global step) is printed beside it,
and the profile's block compute per document beside the local step's.

Usage (instant)::

    python benchmarks/napkin_dask_fit.py > benchmarks/results/dask_fit_napkin.txt
"""

import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, header  # noqa: E402


def constants(text):
    def grab(pattern):
        m = re.search(pattern, text)
        if m is None:
            raise SystemExit(f"results file lacks {pattern!r}: run bench_dask_fit.py first")
        return float(m.group(1))

    return {
        "ms_per_doc": grab(r"= ([0-9.]+) ms per document"),
        "global_ms": grab(r"global step on the client: ([0-9.]+) ms per update"),
        "globals_mb": grab(r"global parameters (?:scattered|sent) ([0-9.]+) MB"),
        "stats_mb": grab(r"statistics returned ([0-9.]+) MB"),
        "total_mb": grab(r"the client receives per update, ([0-9.]+) MB"),
        "round_trip_ms": grab(r"empty task on the 2-worker cluster: ([0-9.]+) ms"),
    }


def profile_constants(text):
    """The profile's per-update cost no worker shortens, on 1 worker, and its block
    compute per document (1 worker), from ``bench_dask_fit.py --profile``."""
    def grab(pattern, group=1):
        m = re.search(pattern, text)
        if m is None:
            raise SystemExit(f"profile file lacks {pattern!r}: run bench_dask_fit.py --profile")
        return float(m.group(group))

    docs = grab(r"([0-9]+) documents \(")
    updates = math.ceil(docs / grab(r"batch_size=([0-9]+)"))
    fixed_1w = grab(r"it does not halve: [0-9.]+ s on 2 workers, ([0-9.]+) s on 1")
    compute_1w = grab(r"block tasks, compute \(all workers\) +([0-9.]+)")
    return {"updates": updates, "fixed_ms": fixed_1w / updates * 1e3,
            "profile_ms_per_doc": compute_1w / docs * 1e3}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=str(RESULTS / "dask_fit_speed_idle5.txt"))
    p.add_argument("--profile", default=str(RESULTS / "dask_fit_profile_slots.txt"))
    p.add_argument("--docs", type=float, default=10e6)
    p.add_argument("--workers", type=int, default=64)
    p.add_argument("--per-worker", type=int, nargs="+", default=[500, 2000])
    p.add_argument("--bandwidth", type=float, default=1e9, help="bytes per second per link")
    p.add_argument("--single-batch", type=int, default=200)
    args = p.parse_args()
    header([f"constants from {os.path.relpath(args.results, RESULTS.parent)} and "
            f"{os.path.relpath(args.profile, RESULTS.parent)}"])
    c = constants(open(args.results).read())
    print("measured constants:", ", ".join(f"{k} = {v:g}" for k, v in c.items()))
    prof = profile_constants(open(args.profile).read())
    print(f"measured per update (profile, 1 worker, {prof['updates']} updates a fit): "
          f"fixed_ms = {prof['fixed_ms']:.1f} (what no worker shortens), against "
          f"global_ms + round_trip_ms = {c['global_ms'] + c['round_trip_ms']:.1f}; block "
          f"compute {prof['profile_ms_per_doc']:.3f} ms per document, against "
          f"ms_per_doc = {c['ms_per_doc']:g}")
    print(f"assumed: {args.bandwidth / 1e9:g} GB/s per link; {args.workers} workers; "
          f"{args.docs:.3g} documents\n")
    one_core = (args.docs * c["ms_per_doc"] / 1e3
                + math.ceil(args.docs / args.single_batch) * c["global_ms"] / 1e3)
    print(f"one core, minibatches of {args.single_batch}: {one_core:,.0f} s per pass "
          f"({one_core / 3600:.2f} h)")
    W = args.workers
    levels = math.ceil(math.log2(W)) if W > 1 else 0
    for b in args.per_worker:
        batch = b * W
        updates = math.ceil(args.docs / batch)
        local = b * c["ms_per_doc"] / 1e3
        base = local + prof["fixed_ms"] / 1e3
        base_before = local + c["global_ms"] / 1e3 + c["round_trip_ms"] / 1e3
        fan = c["globals_mb"] * 1e6 / args.bandwidth * (W + 1)
        copies = (c["globals_mb"] * 1e6 / args.bandwidth * (levels + 2)
                  + levels * c["round_trip_ms"] / 1e3)
        tree = ((levels + 1) * c["total_mb"] * 1e6 / args.bandwidth
                + levels * c["round_trip_ms"] / 1e3)
        flat = W * c["stats_mb"] * 1e6 / args.bandwidth
        print(f"{W} workers x {b} documents per update (minibatch {batch:,}): {updates:,} "
              f"updates per pass")
        for name, out, back in (
                ("tree, parameters by a tree of copies (now)", copies, tree),
                ("tree, parameters fetched from one worker (before)", fan, tree),
                ("flat, parameters fetched from one worker (earlier)", fan, flat)):
            per = base + out + back
            total = updates * per
            print(f"  statistics by {name}: each update {per:.3f} s = local {local:.3f} + "
                  f"fixed (measured) {prof['fixed_ms'] / 1e3:.4f} + parameters out "
                  f"{out:.3f} + statistics back {back:.3f}; a pass {total:,.0f} s, "
                  f"{one_core / total:.0f}x one core ({one_core / total / W:.0%} of {W}x)")
        per = base_before + copies + tree
        total = updates * per
        print(f"  (priced as before this profile, global {c['global_ms'] / 1e3:.4f} + round "
              f"trip {c['round_trip_ms'] / 1e3:.3f} in place of the measured fixed cost, "
              f"copies and tree: each update {per:.3f} s, a pass {total:,.0f} s, "
              f"{one_core / total:.0f}x one core)")
    print(f"\nparameters out by the copies: client to scheduler to one worker, then "
          f"{levels} levels of one {c['globals_mb']:.2f} MB copy per link and one task "
          f"round trip each; fetched from one worker: {W} arrays through its link")
    print(f"statistics back by the tree: {levels} levels of one {c['total_mb']:.2f} MB "
          f"array per link and one task round trip each, then the total to the client; "
          f"flat: {W} arrays of {c['stats_mb']:.2f} MB through the client's link")

if __name__ == "__main__":
    main()
