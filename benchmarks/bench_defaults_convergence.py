"""Do the ``n_iter="auto"`` defaults converge? Defaults against 4x longer, same seed (issue 25).

Per estimator (one ``--only`` per invocation, so that each is its own niced process):
``Estimator(random_state=0).fit(X)`` at its defaults, then the same estimator with the
same seed trained for four times the passes the defaults made (``n_iter = 4 n_iter_``,
the 4x run's burn-in for BayesianSBN four times the default's, early stopping off for
the optimisers). Printed: fit CPU-seconds, passes and why ``"auto"`` stopped, the test
figure, ``score_samples`` CPU-seconds per 1,000 rows, and the gap to the 4x run.

Data (``--data-home`` / ``SKDGM_DATA``):

* DeepLDA: the full 20 Newsgroups of the deep-LDA paper (11,284 training documents);
  test figure: per-held-out-word perplexity of the 7,502 test documents
  (``perplexity(test_observed, test_heldout)``). Target: within 1 %, default fit <= 120 CPU-s.
  ``--rows n`` trains on a random ``n`` of the training documents instead.
* DBMCAST, BayesianSBN: ``--rows`` (10,000) rows drawn from the 50,000 training images
  of the fixed binarised MNIST; test: ``--test-rows`` (2,000; BayesianSBN 100, the same
  rows for both runs) of its test images (the DBM's variational bound, the SBN's
  log-likelihood, AIS above 16 units). Target: within 1 nat, fit <= 300 CPU-s.
  The test rows are drawn after the training rows, so they differ between ``--rows``;
  ``--test-rows-of n`` scores on those of a ``--rows n`` run instead.
* GaussianBernoulliRBM: ``--rows`` MNIST training images, dequantised (``x + U(0, 1)``)
  and standardised per pixel with the training rows' mean and std (pixels whose
  grey-level std is at most 1 dropped, as in ``bench_defaults_scaling.py``); test
  rows transformed alike. Target: within 1 nat, fit <= 300 CPU-s.

``--rows`` above the training rows the data have (50,000 binarised, 60,000 grey-level
MNIST images, 11,284 documents) draws the rows *with replacement*: at 100,000 rows each
binarised image recurs twice on average (exact copies; the held-out slice of
``"auto"`` then shares images with the training rows), each grey-level one 1.7 times
with fresh dequantisation noise, each document 8.9 times. Such a line measures the
cost at that size; its test figure is that of fewer distinct rows.

With ``--skip-long`` only the defaults run (the 1,000- and 100,000-row lines of the
user guide's "How long" table). ``--set NAME=VALUE ...`` changes hyper-parameters
(the 4x run keeps them; the line is labelled ``set``). ``--long-from FILE`` runs only the 4x arm: it reads the default
run's line (passes, figure) from ``FILE``, the output of an earlier ``--skip-long`` run
with the same data options (and the same ``--set``, whose ``set`` line it then reads),
and prints that line again beside the 4x one (for the
optimisers, whose 4x run alone can take most of a locked slot; not BayesianSBN,
whose 4x burn-in the saved line does not hold). BayesianSBN's 4x run is split over
two processes instead: ``--long-first k`` runs the default and the first ``k`` passes
of the 4x run (``warm_start=True``), ``--long-resume`` the rest of the same chain
(bit-identical to one fit), and scores both.

``--seed S`` gives the estimators ``random_state=S`` (default 0) and leaves the data
rows as they are, to measure how much a result depends on the training's seed.

``--also-score B S`` (DeepLDA): each fit is scored a second time with ``B`` + ``S``
local sweeps (``perplexity(..., n_burn=B, n_samples=S)``), on a line labelled
``default@B/S`` / ``4x@B/S`` with its own scoring cost, and the gap is given both ways.

``--share-lock FILE`` (for a run longer than a locked slot on a shared machine: a 4x
run, or a default whose passes are long, such as online VB's at 100,000 rows): the
script takes ``FILE``'s ``flock`` itself instead of running under ``flock``, and
between two passes of either run, once it has held the lock for ``--hold-max`` seconds
(600), releases it, lets a waiting job take it, and waits to take it back. The figures
are CPU seconds of this process, so the waits do not count.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 5 python \\
        benchmarks/bench_defaults_convergence.py --only DeepLDA [--rows 1000 --skip-long]

Results: ``benchmarks/results/defaults_convergence_{deep_lda,dbm,sbn,grbm}.txt`` (and
``..._1k.txt`` for ``--rows 1000 --skip-long``, ``..._100k.txt`` for
``--rows 100000 --skip-long``; ``defaults_convergence_dbm_4x.txt`` for
``--only DBMCAST --long-from benchmarks/results/defaults_convergence_dbm.txt``;
``defaults_convergence_sbn_4x.txt`` for ``--only BayesianSBN --long-first 264`` then
``--only BayesianSBN --long-resume``, appended;
``defaults_convergence_sbn_online_vb_100k_auto.txt`` for ``--only BayesianSBN --rows
100000 --skip-long --share-lock /work/cpu.lock --hold-max 400 --set inference=online_vb``,
online VB's update-counted ``"auto"``; ``defaults_convergence_sbn_50k.txt`` and
``defaults_convergence_sbn_dsghmc_nais_50k.txt`` for ``--only BayesianSBN --rows 50000
--skip-long --share-lock /work/cpu.lock``, the second with ``--set
inference=dsghmc_nais``; ``defaults_convergence_sbn_auto_50k.txt`` for the same
command at the DSGHMC-NAIS default of ``inference="auto"``, and
``defaults_convergence_sbn_10k_on_50k_test.txt`` for ``--only BayesianSBN --rows 10000
--test-rows-of 50000 --skip-long --share-lock /work/cpu.lock``, the 10,000-row default
on the 50,000-row lines' test rows; ``defaults_convergence_{dbm,grbm,sbn,deep_lda}_1m.txt``
for ``--rows 1000000 --skip-long``, where the data are prepared in chunks and the
training rows kept in float32 above ``LEAN_ROWS``). CPU seconds of this process, one
BLAS thread.
"""

import argparse
import fcntl
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header, shown  # noqa: E402

NAMES = ("DeepLDA", "DBMCAST", "BayesianSBN", "GaussianBernoulliRBM")


def load(name, home, n_rows, n_test, test_as=None):
    """``(X_train, test, description)``; ``test`` is what :func:`quality` reads.

    ``test_as`` (binarised MNIST): the test rows a run of ``test_as`` training rows
    draws (the training draw comes first from the same generator, so runs of other
    sizes are scored on other test rows otherwise).
    """
    from skdgm import datasets

    rng = np.random.default_rng(0)
    if name == "DeepLDA":
        d = datasets.fetch_20newsgroups_bow(data_home=home, download_if_missing=False)
        train, copies = d.train, ""
        if 0 < n_rows < train.shape[0]:
            train = train[np.sort(rng.choice(train.shape[0], n_rows, replace=False))]
        elif n_rows > train.shape[0]:
            copies = _copies(train, n_rows)
            train = train[_draw(rng, train.shape[0], n_rows)]
        return train, (d.test_observed, d.test_heldout), (
            f"20 Newsgroups, {train.shape[0]} training documents{copies}, "
            f"{d.test_observed.shape[0]} test documents, {d.train.shape[1]} words")
    if name in ("DBMCAST", "BayesianSBN"):
        tr = datasets.fetch_binarized_mnist(data_home=home, subset="train",
                                            download_if_missing=False).data
        te = datasets.fetch_binarized_mnist(data_home=home, subset="test",
                                            download_if_missing=False).data
        rows = _draw(rng, tr.shape[0], n_rows)
        # float32 holds 0/1 exactly; above LEAN_ROWS a float64 copy (6.3 GB at 1M rows)
        # would crowd a shared machine, so the training rows stay float32 there
        Xtr = np.asarray(tr)[rows].astype(np.float32 if n_rows > LEAN_ROWS else np.float64)
        note = ""
        if test_as is not None and test_as != n_rows:
            rng = np.random.default_rng(0)
            _draw(rng, tr.shape[0], test_as)
            note = f" (those of a {test_as}-row run)"
        Xte = np.asarray(te, dtype=np.float64)[rng.choice(te.shape[0], n_test, replace=False)]
        return Xtr, Xte, (f"binarised MNIST, {n_rows} training rows{_copies(tr, n_rows)}, "
                          f"{n_test} test rows{note}")
    tr, _ = datasets.fetch_mnist(data_home=home, subset="train", download_if_missing=False,
                                 return_X_y=True)
    te, _ = datasets.fetch_mnist(data_home=home, subset="test", download_if_missing=False,
                                 return_X_y=True)
    copies = _copies(tr, n_rows)
    if n_rows > LEAN_ROWS:
        return _grey_lean(rng, tr, te, n_rows, n_test, copies)
    tr = np.asarray(tr, dtype=np.float64)[_draw(rng, tr.shape[0], n_rows)]
    te = np.asarray(te, dtype=np.float64)[rng.choice(te.shape[0], n_test, replace=False)]
    keep = tr.std(0) > 1.0
    tr = tr[:, keep] + rng.random((tr.shape[0], int(keep.sum())))
    te = te[:, keep] + rng.random((te.shape[0], int(keep.sum())))
    mean, std = tr.mean(0), tr.std(0)
    return ((tr - mean) / std, (te - mean) / std,
            f"MNIST dequantised + standardised, {tr.shape[1]} pixels (std > 1), "
            f"{n_rows} training rows{copies}, {n_test} test rows")


LEAN_ROWS = 200_000
CHUNK = 50_000


def _grey_lean(rng, tr, te, n_rows, n_test, copies):
    """The grey-level preparation of :func:`load` in row chunks, for ``--rows`` above
    ``LEAN_ROWS``: the same draws in the same order (``Generator.random`` fills rows in
    sequence, so chunks draw what one call would), the training rows returned in
    float32, the dtype the estimator trains in (values as its own float64 -> float32
    cast would give them, up to the rounding of the chunked mean and std)."""
    rows = _draw(rng, tr.shape[0], n_rows)
    te = np.asarray(te, dtype=np.float64)[rng.choice(te.shape[0], n_test, replace=False)]
    tr = np.asarray(tr)
    # the std of the drawn rows, from chunked sums (no full-size float64 temporary)
    s = np.zeros(tr.shape[1])
    ss = np.zeros(tr.shape[1])
    for a in range(0, n_rows, CHUNK):
        x = tr[rows[a:a + CHUNK]].astype(np.float64)
        s += x.sum(0)
        ss += (x * x).sum(0)
    mu = s / n_rows
    keep = np.sqrt(np.maximum(ss / n_rows - mu * mu, 0.0)) > 1.0
    k = int(keep.sum())
    out = np.empty((n_rows, k), dtype=np.float32)
    s, ss = np.zeros(k), np.zeros(k)
    for a in range(0, n_rows, CHUNK):
        x = tr[rows[a:a + CHUNK]][:, keep].astype(np.float64)
        x += rng.random(x.shape)
        s += x.sum(0)
        ss += (x * x).sum(0)
        out[a:a + x.shape[0]] = x
    te = te[:, keep] + rng.random((te.shape[0], k))
    mean = s / n_rows
    std = np.sqrt(np.maximum(ss / n_rows - mean * mean, 0.0))
    # standardised in place; the dequantised values were held in float32 meanwhile
    # (a relative rounding of 6e-8, below the float32 cast the estimator makes anyway)
    for a in range(0, n_rows, CHUNK):
        out[a:a + CHUNK] = (out[a:a + CHUNK].astype(np.float64) - mean) / std
    return out, (te - mean) / std, (
        f"MNIST dequantised + standardised, {k} pixels (std > 1), {n_rows} training "
        f"rows{copies} (prepared in chunks, float32), {n_test} test rows")


def _draw(rng, available, n_rows):
    """Row indices: without replacement up to ``available`` (the draws of the earlier
    results files), with replacement above, so a row recurs ``n_rows / available``
    times on average."""
    return rng.choice(available, n_rows, replace=n_rows > available)


def _copies(rows, n_rows):
    """The description's note when the training rows had to be drawn with replacement."""
    n = rows.shape[0]
    return f" (drawn with replacement from the {n})" if n_rows > n else ""


def _literal(text):
    """``--set``'s value: a Python literal (``10``, ``0.5``, ``(64, 32)``) or a string."""
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def quality(name, est, test):
    """``(figure, CPU-s per 1,000 rows or documents)``."""
    t = time.process_time()
    if name == "DeepLDA":
        value = est.perplexity(*test)
        n = test[0].shape[0]
    else:
        value = float(np.mean(est.score_samples(test)))
        n = test.shape[0]
    return value, (time.process_time() - t) * 1000 / n


def longer(name, est, n_iter_=None):
    """The same estimator (``--set`` included), same seed, four times the passes it made."""
    params = est.get_params()
    params["n_iter"] = 4 * (est.n_iter_ if n_iter_ is None else n_iter_)
    if name == "BayesianSBN":
        params["burn_in"] = 4 * est.burn_in_
    if name in ("DBMCAST", "GaussianBernoulliRBM"):
        params["early_stopping"] = False
    return type(est)(**params)


class SharedLock:
    """``path``'s ``flock``, held by this process and handed over between passes."""

    def __init__(self, path, hold_max):
        self.file, self.hold_max = open(path, "a"), float(hold_max)
        self.take()

    def take(self):
        fcntl.flock(self.file, fcntl.LOCK_EX)
        self.since = time.monotonic()

    def between_passes(self, est):
        """Wrap ``est``'s pass so that the lock is yielded after ``hold_max`` seconds."""
        one_pass = est._fit_pass

        def fit_pass(X, ctx):
            one_pass(X, ctx)
            if time.monotonic() - self.since > self.hold_max:
                fcntl.flock(self.file, fcntl.LOCK_UN)
                time.sleep(5)            # a job blocked on the lock takes it now
                self.take()
        est._fit_pass = fit_pass
        return est


def saved_default(name, path, settings=()):
    """``(line, passes, figure)``: the default run's line of an earlier results file.

    With ``settings`` (``--set``'s ``NAME=VALUE`` strings) the ``set`` line is read,
    and the file's command must have been run with the same settings.
    """
    label = "set" if settings else "default"
    with open(path) as f:
        lines = f.readlines()
    command = next((ln.split() for ln in lines if ln.startswith("# command:")), [])
    made_with = []
    if "--set" in command:
        for arg in command[command.index("--set") + 1:]:
            if arg.startswith("--"):
                break
            made_with.append(arg)
    if sorted(made_with) != sorted(settings):
        raise ValueError(f"{path} was made with --set {' '.join(made_with) or '(nothing)'}, "
                         f"not --set {' '.join(settings) or '(nothing)'}")
    for line in lines:
        fields = line.split()
        if fields[:2] == [name, label]:
            return line.rstrip("\n"), int(fields[3]), float(fields[4])
    raise ValueError(f"{path} has no '{name} {label}' line")


def run(name, est, X, test, label, note=None, sweeps=None):
    """Fit ``est`` on ``X``, score it on ``test`` and print one line; returns the figure.

    ``sweeps`` (DeepLDA, ``--also-score``): ``(n_burn, n_samples)`` local sweeps of a
    second ``perplexity`` of the same fit, printed on a ``label@B/S`` line (fit
    CPU-s repeated); the figure is then ``(default scoring, that scoring)``.
    """
    t = time.process_time()
    est.fit(X)
    fit_s = time.process_time() - t
    value, score_s = quality(name, est, test)
    note = note or getattr(est, "stopping_reason_", "")
    print(f"{name:22s} {label:8s} {fit_s:9.1f} {est.n_iter_:6d} {value:12.3f} "
          f"{score_s:11.2f}  {note}", flush=True)
    if not sweeps:
        return value
    t = time.process_time()
    more = est.perplexity(*test, n_burn=sweeps[0], n_samples=sweeps[1])
    more_s = (time.process_time() - t) * 1000 / test[0].shape[0]
    print(f"{name:22s} {f'{label}@{sweeps[0]}/{sweeps[1]}':8s} {fit_s:9.1f} {est.n_iter_:6d} "
          f"{more:12.3f} {more_s:11.2f}  the same fit scored with perplexity(n_burn="
          f"{sweeps[0]}, n_samples={sweeps[1]})", flush=True)
    return value, more


def sbn_long_in_two(first, est, X, test):
    """BayesianSBN's 4x run split over two processes (each within a locked slot).

    ``first`` passes: the default run, then the first ``first`` passes of the 4x run
    with ``warm_start=True``, saved with the default's line and the CPU so far.
    ``first=None``: load them, run the remaining passes (the same chain, so the
    result is that of one 4x fit, as ``tests/test_sbn_warm_start.py`` checks),
    score, and print the default's line again beside the 4x one.
    """
    import joblib

    path = _common.RESULTS / "defaults_convergence_sbn_4x.joblib"
    if first is not None:
        value = run("BayesianSBN", est, X, test, "default")
        long_est = longer("BayesianSBN", est).set_params(warm_start=True)
        total = long_est.n_iter
        t = time.process_time()
        long_est.set_params(n_iter=first).fit(X)
        cpu = time.process_time() - t
        joblib.dump(dict(est=long_est, total=total, cpu=cpu, value=value,
                         default=(est.n_iter_, est.burn_in_)), path)
        print(f"# 4x run: first {first} of {total} passes (burn-in {long_est.burn_in_}) "
              f"in {cpu:.1f} CPU-s, saved for --long-resume", flush=True)
        return
    saved = joblib.load(path)
    long_est, value = saved["est"], saved["value"]
    rest = saved["total"] - long_est.n_iter_
    t = time.process_time()
    long_est.set_params(n_iter=rest).fit(X)
    cpu = saved["cpu"] + time.process_time() - t
    long_value, score_s = quality("BayesianSBN", long_est, test)
    print(f"# default (from the --long-first run): {saved['default'][0]} passes, burn-in "
          f"{saved['default'][1]}, mean log p {value:.3f}")
    print(f"{'BayesianSBN':22s} {'4x':8s} {cpu:9.1f} {long_est.n_iter_:6d} {long_value:12.3f} "
          f"{score_s:11.2f}  {saved['total']} passes fixed, burn-in {long_est.burn_in_} "
          f"(two warm_start calls: {saved['total'] - rest} + {rest})", flush=True)
    print(gap_line(value, long_value))


def gap_line(value, long_value):
    """The default's distance to the 4x run, in words a reader cannot misread."""
    gap = long_value - value
    where = "below" if gap > 0 else "above"
    return f"# default is {abs(gap):.3f} nats {where} the 4x run (target: within 1 nat below)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=NAMES, required=True)
    ap.add_argument("--rows", type=int, default=None,
                    help="training rows (default 10,000; DeepLDA: all 11,284 documents)")
    ap.add_argument("--test-rows", type=int, default=None,
                    help="test rows (default 2,000; BayesianSBN 100, whose AIS score "
                         "costs about 0.7 CPU-s a row above 16 units)")
    ap.add_argument("--test-rows-of", type=int, default=None, metavar="ROWS",
                    help="DBMCAST, BayesianSBN: score on the test rows a --rows ROWS run "
                         "draws (to compare sizes on the same test rows)")
    ap.add_argument("--skip-long", action="store_true", help="only the defaults")
    ap.add_argument("--long-from", metavar="FILE", default=None,
                    help="only the 4x run; the default's line is read from FILE "
                         "(an earlier --skip-long output)")
    ap.add_argument("--share-lock", metavar="FILE", default=None,
                    help="hold FILE's flock, handing it over between passes")
    ap.add_argument("--hold-max", type=float, default=600.0,
                    help="seconds the lock is held before it is handed over (600)")
    ap.add_argument("--long-first", type=int, default=None, metavar="PASSES",
                    help="BayesianSBN: run the default, then only the first PASSES of "
                         "the 4x run (warm_start=True), and save it to "
                         "results/defaults_convergence_sbn_4x.joblib for --long-resume")
    ap.add_argument("--long-resume", action="store_true",
                    help="BayesianSBN: finish the 4x run saved by --long-first (the "
                         "same chain: bit-identical to one fit), score it and print both "
                         "lines")
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                    help="hyper-parameters other than the defaults (e.g. BayesianSBN's "
                         "inference=online_vb, which its docs recommend from ~10k rows); "
                         "the lines are then labelled 'set', not 'default'; the 4x run "
                         "keeps them")
    ap.add_argument("--seed", type=int, default=0,
                    help="the estimators' random_state (0); the data rows do not change")
    ap.add_argument("--also-score", nargs=2, type=int, default=None, metavar=("B", "S"),
                    help="DeepLDA: score each fit a second time with B + S local sweeps "
                         "(perplexity's n_burn, n_samples); not with --long-from")
    _common.add_data_home_arg(ap)
    args = ap.parse_args()
    if args.also_score and (args.only != "DeepLDA" or args.long_from):
        ap.error("--also-score: DeepLDA only, and not with --long-from")
    lock = SharedLock(args.share_lock, args.hold_max) if args.share_lock else None
    home = _common.data_home(args.data_home)
    name = args.only
    n_rows = args.rows or (0 if name == "DeepLDA" else 10_000)
    n_test = args.test_rows or (100 if name == "BayesianSBN" else 2_000)
    if args.test_rows_of is not None and name not in ("DBMCAST", "BayesianSBN"):
        ap.error("--test-rows-of: DBMCAST and BayesianSBN only (binarised MNIST)")
    X, test, desc = load(name, home, n_rows, n_test, args.test_rows_of)
    header([f"data: {shown(home)}", f"# {name}: {desc}"])
    warnings.simplefilter("ignore")
    unit = "perplexity" if name == "DeepLDA" else "mean log p"
    print(f"{'estimator':22s} {'run':8s} {'fit CPU-s':>9s} {'passes':>6s} {unit:>12s} "
          f"{'score/1k':>11s}  why it stopped")
    import skdgm

    params = {k: _literal(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    est = getattr(skdgm, name)(random_state=args.seed, **params)
    if lock is not None:
        lock.between_passes(est)
    if params and (args.long_first is not None or args.long_resume):
        ap.error("--set: not with BayesianSBN's split 4x run (--long-first/-resume), "
                 "whose saved line is the defaults'")
    if args.long_first is not None or args.long_resume:
        if name != "BayesianSBN":
            ap.error("--long-first / --long-resume: BayesianSBN only (warm_start)")
        return sbn_long_in_two(args.long_first, est, X, test)
    if args.long_from:
        if name == "BayesianSBN":
            ap.error("--long-from: BayesianSBN's 4x run needs the default's burn-in")
        line, passes, value = saved_default(name, args.long_from, args.set)
        print(f"{line}   [read from {os.path.basename(args.long_from)}]", flush=True)
    else:
        value = run(name, est, X, test, "set" if params else "default",
                    sweeps=args.also_score)
        passes = None
    if args.skip_long:
        return
    long_est = longer(name, est, passes)
    if lock is not None:
        lock.between_passes(long_est)
    long_value = run(name, long_est, X, test, "4x",
                     f"{long_est.get_params()['n_iter']} passes fixed", sweeps=args.also_score)
    if name == "DeepLDA" and args.also_score:
        b, s = args.also_score
        for how, v, lv in (("default scoring", value[0], long_value[0]),
                           (f"scored with {b} + {s} local sweeps", value[1], long_value[1])):
            print(f"# {how}: default perplexity is {100 * (v / lv - 1):+.2f} % of the 4x "
                  "run's (target: within 1 %)")
    elif name == "DeepLDA":
        gap = 100 * (value / long_value - 1)
        print(f"# default perplexity is {gap:+.2f} % of the 4x run's (target: within 1 %)")
    else:
        print(gap_line(value, long_value))


if __name__ == "__main__":
    main()
