"""Shared loader for the deep-LDA benchmarks: the paper's 20News split, via skdgm.datasets.

The folder is ``--data-home`` where a script offers it, else the ``SKDGM_SHARED_DATA``
environment variable, else a ``shared/data`` folder beside or above this checkout
(the team's layout), else :func:`skdgm.datasets.get_data_home` (``SKDGM_DATA`` or
``~/skdgm_data``, where a missing file is downloaded).
"""

import os
from pathlib import Path


def data_home(explicit=None):
    """The folder to read ``20news_2000.npz`` from (see the module docstring)."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("SKDGM_SHARED_DATA")
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "data" / "20news_2000.npz").exists():
            return parent / "shared" / "data"
    return None   # skdgm.datasets' own default


def load_20news(home=None):
    """train, test_observed, test_heldout (CSR counts) and the vocabulary."""
    from skdgm.datasets import fetch_20newsgroups_bow

    d = fetch_20newsgroups_bow(data_home=data_home(home))
    return d.train, d.test_observed, d.test_heldout, d.vocabulary
