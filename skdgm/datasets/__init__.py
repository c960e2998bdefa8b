"""Benchmark data sets of the papers skdgm implements, fetched with checksums.

Each ``fetch_*`` reads one ``.npz`` from ``data_home`` (the ``SKDGM_DATA``
environment variable, else ``~/skdgm_data``) after checking its SHA-256, and
when it is absent rebuilds it from the canonical public source files, checks
the converted arrays against a content digest, and stores it atomically. A file
that fails its check is never used. ``make_*`` build small synthetic sets.
"""

from ._base import ChecksumError, get_data_home
from ._fetchers import (
    caltech101_silhouettes_split,
    fetch_20newsgroups_bow,
    fetch_binarized_mnist,
    fetch_caltech101_silhouettes,
    fetch_mnist,
)
from ._samples_generator import make_grbm_mixture

__all__ = [
    "ChecksumError",
    "caltech101_silhouettes_split",
    "fetch_20newsgroups_bow",
    "fetch_binarized_mnist",
    "fetch_caltech101_silhouettes",
    "fetch_mnist",
    "get_data_home",
    "make_grbm_mixture",
]
