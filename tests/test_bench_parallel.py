"""``benchmarks/bench_parallel.py --spread``: the paired readings' summary (issue 26).

On a noisy host the row's figure (ratio of the median wall-clock times) moves from
run to run; ``spread_line`` says how far it can be trusted. Its numbers are checked
here against values worked out by hand.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from _bench import bench_module

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_parallel.py"

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="no benchmarks/ folder here")


@pytest.fixture(scope="module")
def bench():
    return bench_module("bench_parallel")


def _numbers(line):
    return [float(x) for x in re.findall(r"\d+\.\d+|\d+", line)]


def test_spread_line_paired_quartiles_and_count(bench):
    # paired ratios 1.5, 1.6, 1.7, 1.8, 2.0: median 1.7, quartiles 1.6 and 1.8
    w2 = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    w1 = np.array([1.5, 1.6, 1.7, 1.8, 2.0])
    line = bench.spread_line(w1, w2)
    nums = _numbers(line)
    assert nums[:3] == [1.70, 1.60, 1.80]
    # 1.7 itself counts as reaching the goal: three of the five
    assert nums[3:5] == [3, 5]


def test_spread_line_interval_brackets_the_figure(bench):
    rng = np.random.default_rng(0)
    w2 = rng.uniform(0.5, 0.7, 61)
    w1 = w2 * rng.normal(1.8, 0.1, 61)
    line = bench.spread_line(w1, w2)
    lo, hi = _numbers(line)[-2:]
    figure = np.median(w1) / np.median(w2)
    assert lo <= round(figure, 2) <= hi
    assert hi - lo < 0.2
    # a constant ratio leaves no spread: the interval is the ratio itself
    line = bench.spread_line(2.0 * w2, w2)
    assert _numbers(line)[-2:] == [2.0, 2.0]
