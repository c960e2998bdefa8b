"""Cost of a verified load, speed of the .amat reader, and checks of the converters.

Three measurements, printed as they are made:

1. For every dataset present in ``--data-home`` (default: see
   ``benchmarks/_common.py``, ``data_home``): the CPU time of the ``fetch_*`` call
   (median of ``--repeat``) and, inside it, of the SHA-256 over the file's bytes.
2. ``read_amat`` (``numpy.loadtxt`` plus its 0/1 checks) against bare
   ``numpy.loadtxt`` on the same synthetic Bernoulli(0.13) text file of
   ``--rows`` x 784 values, side by side.
3. With ``--source-dir`` holding public source files under their canonical names
   (``20news_data.mat``, ``binarized_mnist_{train,valid,test}.amat``, MNIST idx
   files, ``caltech101_silhouettes_28.mat``): each complete set is converted and
   its content digest compared with the reference; MNIST idx files present on
   their own are compared array by array with the reference ``mnist.npz``.

Times are CPU seconds of this process (``time.process_time``), one BLAS thread.

Usage (under a minute)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_datasets_load.py \\
        > benchmarks/results/datasets_load.txt
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from skdgm.datasets import (
    _convert,
    _fetchers,
    fetch_20newsgroups_bow,
    fetch_binarized_mnist,
    fetch_caltech101_silhouettes,
    fetch_mnist,
)
from skdgm.datasets._base import content_sha256, file_sha256

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_data_home_arg, cpu_timed, data_home, header, shown  # noqa: E402

FETCHERS = [
    (_fetchers.MNIST, lambda home: fetch_mnist(data_home=home, subset="all")),
    (
        _fetchers.BINARIZED_MNIST,
        lambda home: fetch_binarized_mnist(data_home=home, subset="all"),
    ),
    (_fetchers.NEWS20, lambda home: fetch_20newsgroups_bow(data_home=home)),
    (
        _fetchers.CALTECH101_SILHOUETTES,
        lambda home: fetch_caltech101_silhouettes(data_home=home),
    ),
]


def _median_time(func, repeat):
    return statistics.median(cpu_timed(func)[1] for _ in range(repeat))


def bench_loads(home, repeat):
    print(f"== verified loads from {shown(home)} (CPU s, median of {repeat})")
    print(f"{'file':38s} {'MB':>6s} {'fetch s':>8s} {'sha256 s':>9s}")
    for spec, fetch in FETCHERS:
        path = home / spec.filename
        if not path.is_file():
            print(f"{spec.filename:38s} absent")
            continue
        t_fetch = _median_time(lambda f=fetch: f(home), repeat)
        t_sha = _median_time(lambda p=path: file_sha256(p), repeat)
        print(
            f"{spec.filename:38s} {path.stat().st_size / 1e6:6.2f} "
            f"{t_fetch:8.3f} {t_sha:9.3f}"
        )


def bench_amat(rows, repeat):
    print(f"== .amat reader on {rows} x 784 synthetic values (CPU s, median of {repeat})")
    bits = (np.random.default_rng(0).random((rows, 784)) < 0.13).astype(np.uint8)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.amat"
        np.savetxt(path, bits, fmt="%d")
        ours = _convert.read_amat(path)
        theirs = np.loadtxt(path, dtype=np.uint8)
        assert np.array_equal(ours, bits) and np.array_equal(theirs, bits)
        t_ours = _median_time(lambda: _convert.read_amat(path), repeat)
        t_loadtxt = _median_time(lambda: np.loadtxt(path, dtype=np.uint8), repeat)
    print(
        f"read_amat {t_ours:.3f} s, numpy.loadtxt {t_loadtxt:.3f} s, "
        f"ratio {t_loadtxt / t_ours:.1f}x"
    )


def check_sources(source_dir, home):
    print(f"== converting the public source files in {shown(source_dir)}")
    for spec, _ in FETCHERS:
        paths = {r.name: source_dir / r.name for r in spec.remotes}
        if all(p.is_file() for p in paths.values()):
            arrays, elapsed = cpu_timed(spec.convert, paths)
            ok = content_sha256(arrays, spec.content_keys) == spec.content_sha256
            print(
                f"{spec.filename:38s} converted in {elapsed:.2f} s, content digest "
                f"{'MATCHES' if ok else 'DIFFERS'}"
            )
        else:
            print(
                f"{spec.filename:38s} sources incomplete "
                f"({sum(p.is_file() for p in paths.values())}/{len(paths)})"
            )
    reference = None if home is None else home / _fetchers.MNIST.filename
    if reference is not None and reference.is_file():
        with np.load(reference) as npz:
            for name, key in (
                ("train-images-idx3-ubyte.gz", "x_train"),
                ("train-labels-idx1-ubyte.gz", "y_train"),
                ("t10k-images-idx3-ubyte.gz", "x_test"),
                ("t10k-labels-idx1-ubyte.gz", "y_test"),
            ):
                if (source_dir / name).is_file():
                    same = np.array_equal(
                        _convert.read_idx(source_dir / name), npz[key]
                    )
                    print(
                        f"  {name:28s} vs mnist.npz[{key!r}]: "
                        f"{'identical' if same else 'DIFFERENT'}"
                    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_home_arg(parser)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--source-dir", type=Path, default=None)
    args = parser.parse_args()
    home = data_home(args.data_home)
    header([f"data: {shown(home)}"])
    if home is None:
        print("== verified loads skipped: no data folder (give --data-home or set SKDGM_DATA)")
    else:
        bench_loads(home, args.repeat)
    bench_amat(args.rows, args.repeat)
    if args.source_dir is not None:
        check_sources(args.source_dir, home)


if __name__ == "__main__":
    main()
