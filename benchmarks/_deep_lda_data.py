"""Shared loader for the deep-LDA benchmarks: the paper's 20News split, via skdgm.datasets.

The folder is found by :func:`_common.data_home` (``--data-home``, else ``SKDGM_DATA``,
else a ``shared/data`` folder above the checkout, else ``~/skdgm_data``).
"""

import _common


def load_20news(home=None):
    """train, test_observed, test_heldout (CSR counts) and the vocabulary."""
    from skdgm.datasets import fetch_20newsgroups_bow

    d = fetch_20newsgroups_bow(data_home=_common.data_home(home))
    return d.train, d.test_observed, d.test_heldout, d.vocabulary
