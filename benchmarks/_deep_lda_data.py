"""Shared loader for the deep-LDA benchmarks: the paper's 20News split."""

from pathlib import Path

import numpy as np
import scipy.sparse as sp

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "20news_2000.npz"


def load_20news(path=DATA):
    """train, test_observed, test_heldout (CSR counts) and the vocabulary."""
    if not Path(path).exists():
        raise SystemExit(f"{path} not found: the benchmark needs ../shared/data/20news_2000.npz")
    d = np.load(path)

    def part(p):
        return sp.csr_matrix((d[p + "_data"], d[p + "_indices"], d[p + "_indptr"]),
                             shape=tuple(d[p + "_shape"]))

    return part("train"), part("test_observed"), part("test_heldout"), d["vocabulary"]
