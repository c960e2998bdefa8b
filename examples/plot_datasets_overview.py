"""
=====================================
The benchmark data sets of the papers
=====================================

:mod:`skdgm.datasets` loads the four data sets the papers report on, each from
one ``.npz`` file whose SHA-256 is checked before use. This example looks in
``SKDGM_DATA`` (or the team's ``shared/data`` folder beside the checkout) and
never downloads: with ``download_if_missing=False`` an absent file raises
``OSError`` at once, and the example then only shows the seeded CalTech 101
Silhouettes split, which needs no data.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from skdgm.datasets import (
    caltech101_silhouettes_split,
    fetch_20newsgroups_bow,
    fetch_binarized_mnist,
    fetch_caltech101_silhouettes,
    fetch_mnist,
)

try:
    here = Path(__file__).resolve().parents[1]
except NameError:  # run interactively
    here = Path.cwd()
data_home = os.environ.get("SKDGM_DATA") or here.parent / "shared" / "data"

# %%
# Images: grey-level MNIST, its fixed binarization, CalTech silhouettes
# ----------------------------------------------------------------------
# ``images`` holds each data set as (n, 28, 28); ``data`` is the same pixels
# flattened to 784 columns, ready for an estimator. The silhouettes are stored
# column-major in the source file; ``images`` turns them upright.
rows = []
try:
    mnist = fetch_mnist(data_home=data_home, subset="test", download_if_missing=False)
    rows.append(("MNIST (test)", mnist.images[:8]))
    binary = fetch_binarized_mnist(
        data_home=data_home, subset="test", download_if_missing=False
    )
    rows.append(("binarized MNIST (test)", binary.images[:8]))
    silhouettes = fetch_caltech101_silhouettes(
        data_home=data_home, download_if_missing=False
    )
    rows.append(("CalTech 101 Silhouettes", silhouettes.images[::1100][:8]))
except OSError as exc:
    print(f"data not available here ({type(exc).__name__}); skipping the images")

if rows:
    fig, axes = plt.subplots(len(rows), 8, figsize=(8, 1.2 * len(rows)))
    for r, (title, images) in enumerate(rows):
        for c, image in enumerate(images):
            axes[r, c].imshow(image, cmap="gray_r" if r < 2 else "gray")
            axes[r, c].set_axis_off()
        axes[r, 0].set_title(title, loc="left", fontsize=9)
    fig.tight_layout()

# %%
# 20 Newsgroups as counts, with a per-document held-out split
# ------------------------------------------------------------
# Topic models infer each test document from ``test_observed`` and score the
# per-held-out-word perplexity on ``test_heldout``.
try:
    news = fetch_20newsgroups_bow(data_home=data_home, download_if_missing=False)
    print("train", news.train.shape, "tokens", int(news.train.sum()))
    print(
        "test observed tokens",
        int(news.test_observed.sum()),
        "held-out tokens",
        int(news.test_heldout.sum()),
    )
    top = np.argsort(-np.asarray(news.train.sum(axis=0)).ravel())[:10]
    print("most frequent words:", ", ".join(news.vocabulary[top]))
except OSError as exc:
    print(f"20 Newsgroups not available here ({type(exc).__name__})")

# %%
# A seeded stand-in for the CalTech split
# ---------------------------------------
# Marlin et al.'s ``split1`` is not distributed with the full file; the helper
# draws a split of the same sizes from a seed (the same seed, the same split).
split = caltech101_silhouettes_split(random_state=0)
sizes = {name: len(split[name]) for name in ("train", "valid", "test")}
print(sizes)
fig, ax = plt.subplots(figsize=(4, 2))
ax.barh(list(sizes), list(sizes.values()))
ax.set_xlabel("images")
fig.tight_layout()
plt.show()
