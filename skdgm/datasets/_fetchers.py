"""The public ``fetch_*`` functions: one verified ``.npz`` in, a ``Bunch`` out."""

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from .._core.random import as_generator
from ._base import DatasetSpec, RemoteFile, load_dataset
from ._convert import (
    convert_20news,
    convert_binarized_mnist,
    convert_caltech101_silhouettes,
    convert_mnist,
)

__all__ = [
    "caltech101_silhouettes_split",
    "fetch_20newsgroups_bow",
    "fetch_binarized_mnist",
    "fetch_caltech101_silhouettes",
    "fetch_mnist",
]

# File digests: the reference copies (shared/data/README.md). Content digests:
# skdgm.datasets._base.content_sha256 over ``content_keys``, computed from those
# same files; conversions of the public sources were checked to reproduce them
# where the source was at hand (see each spec).

_MNIST_MIRRORS = (
    "http://yann.lecun.com/exdb/mnist/",
    # LeCun's server often answers 403 nowadays; PyTorch's mirror of the same files.
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
)

MNIST = DatasetSpec(
    filename="mnist.npz",
    sha256="06af5dfe73b70e3bc1c36439982b18a8d76803db9b544f6fdf838a37fbb01b64",
    content_keys=("x_train", "y_train", "x_test", "y_test"),
    # checked: the idx files of github kelas/mnist give x_test, y_test and y_train
    # identical to the reference file (its train images were not at hand).
    content_sha256="e5ca100bd8cd75d0faed0808d24c5ae37ba74e911e6bff4c4bf0d3a844844a73",
    remotes=tuple(
        RemoteFile(name, tuple(base + name for base in _MNIST_MIRRORS))
        for name in (
            "train-images-idx3-ubyte.gz",
            "train-labels-idx1-ubyte.gz",
            "t10k-images-idx3-ubyte.gz",
            "t10k-labels-idx1-ubyte.gz",
        )
    ),
    convert=convert_mnist,
)

_LAROCHELLE = "http://www.cs.toronto.edu/~larocheh/public/datasets/binarized_mnist/"

BINARIZED_MNIST = DatasetSpec(
    filename="binarized_mnist_larochelle.npz",
    sha256="78cf88b734d328b2bd76b84d22740a9ad80f1df09c91b2518a19495d1c23ba0f",
    content_keys=("n_features", "train_bits", "valid_bits", "test_bits"),
    # checked: the copy in github mingzhang-yin/ARM-gradient (MATLAB files under the
    # .amat names) and the same matrices written as text .amat both reproduce it.
    content_sha256="332eb31fe33ae99b5642e23c1c3bf4dbe308ba34f4415bf6ba563050cdb80428",
    remotes=tuple(
        RemoteFile(name, (_LAROCHELLE + name,))
        for name in (
            "binarized_mnist_train.amat",
            "binarized_mnist_valid.amat",
            "binarized_mnist_test.amat",
        )
    ),
    convert=convert_binarized_mnist,
)

_20NEWS_KEYS = tuple(
    f"{part}_{what}"
    for part in ("train", "test_observed", "test_heldout")
    for what in ("data", "indices", "indptr", "shape")
) + ("y_train", "y_test", "vocabulary", "label_names")

NEWS20 = DatasetSpec(
    filename="20news_2000.npz",
    sha256="872633cfef0a4cc79962c55f1ef056db35c1c41d553e1b09a5e03eafdf06d6c4",
    content_keys=_20NEWS_KEYS,
    # checked: converting 20news_data.mat of the commit below reproduces it.
    content_sha256="9619d38f55d9c5f1ac5d095f49a45fac932356dafacc3bad5f1dbfada17bedf5",
    remotes=(
        RemoteFile(
            "20news_data.mat",
            (
                # pinned to a commit so the file cannot change under the digest
                "https://raw.githubusercontent.com/mingyuanzhou/DeepLDA_TLASGR_MCMC/"
                "5ef748fb75c140194dad115362ff5594da91264d/20news_data.mat",
            ),
        ),
    ),
    convert=convert_20news,
)

CALTECH101_SILHOUETTES = DatasetSpec(
    filename="caltech101_silhouettes_28_full.npz",
    sha256="b7025f43ec3ec8910dcc9c17dd4843b14c764fa4063077f55cf77c5f0a273465",
    content_keys=("n_features", "X_bits", "y", "classnames"),
    # NOT checked against Marlin's file (it was not at hand): the variable names X,
    # Y, classnames and the row-per-image layout come from public code that reads
    # it. Should the conversion differ, the download fails its content check.
    content_sha256="6e7e878990ede5914b1e28195c5473293fd623fe656826f004df7f327de53511",
    remotes=(
        RemoteFile(
            "caltech101_silhouettes_28.mat",
            ("https://people.cs.umass.edu/~marlin/data/caltech101_silhouettes_28.mat",),
        ),
    ),
    convert=convert_caltech101_silhouettes,
)


def _check_subset(subset, allowed):
    if subset not in allowed:
        raise ValueError(f"subset must be one of {allowed}, got {subset!r}")


def _unpack(bits, n_features):
    return np.unpackbits(bits, axis=1, count=int(n_features))


def fetch_mnist(
    *,
    data_home=None,
    subset="train",
    dtype=np.uint8,
    download_if_missing=True,
    return_X_y=False,
):
    """LeCun's MNIST digits: 28 x 28 grey levels, 60,000 train and 10,000 test.

    Read from ``data_home/mnist.npz`` after checking its SHA-256; when absent,
    built from the four original idx files (from LeCun's site, else PyTorch's
    mirror of them), checked, and stored there.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder of the data files; ``None`` means the ``SKDGM_DATA`` environment
        variable, else ``~/skdgm_data``.
    subset : {"train", "test", "all"}, default="train"
        ``"all"`` is the training images followed by the test images.
    dtype : dtype, default=np.uint8
        ``uint8`` gives the grey levels 0..255 as stored; a floating dtype gives
        them divided by 255 (in [0, 1]).
    download_if_missing : bool, default=True
        If False, a missing file raises ``OSError`` instead of being downloaded.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of the Bunch.

    Returns
    -------
    data : Bunch
        ``data`` (n, 784) row-major pixels, ``images`` (n, 28, 28), ``target``
        (n,) int64 digits, ``target_names``, ``subset``, ``filename``, ``DESCR``.

    Raises
    ------
    ChecksumError
        The file in ``data_home`` (or the downloaded data) is not the expected one.
    OSError
        The file is absent and cannot be downloaded (e.g. offline).
    """
    _check_subset(subset, ("train", "test", "all"))
    dtype = np.dtype(dtype)
    if dtype.kind not in "uif":
        raise ValueError(f"dtype must be an integer or floating dtype, got {dtype}")
    arrays, path = load_dataset(MNIST, data_home, download_if_missing)
    parts = ("train", "test") if subset == "all" else (subset,)
    images = np.concatenate([arrays[f"x_{p}"] for p in parts])
    target = np.concatenate([arrays[f"y_{p}"] for p in parts]).astype(np.int64)
    if dtype.kind == "f":
        images = images.astype(dtype) / dtype.type(255)
    else:
        images = images.astype(dtype)
    if return_X_y:
        return images.reshape(len(images), -1), target
    return Bunch(
        data=images.reshape(len(images), -1),
        images=images,
        target=target,
        target_names=np.arange(10),
        subset=subset,
        filename=str(path),
        DESCR=_MNIST_DESCR,
    )


def fetch_binarized_mnist(*, data_home=None, subset="train", download_if_missing=True):
    """The fixed binarized MNIST of Larochelle & Murray (2011), 50k/10k/10k.

    Each pixel was drawn once as Bernoulli(grey level / 255) (Salakhutdinov &
    Murray, 2008) and the draw fixed; the sigmoid belief net and DBM papers
    report log-likelihoods on this split. Read from
    ``data_home/binarized_mnist_larochelle.npz`` after checking it; when absent,
    built from Larochelle's ``binarized_mnist_{train,valid,test}.amat``.

    Parameters
    ----------
    data_home : str or path-like, default=None
        See :func:`fetch_mnist`.
    subset : {"train", "valid", "test", "all"}, default="train"
        ``"all"`` is train, then valid, then test (70,000 rows).
    download_if_missing : bool, default=True
        If False, a missing file raises ``OSError`` instead of being downloaded.

    Returns
    -------
    data : Bunch
        ``data`` (n, 784) uint8 in {0, 1}, ``images`` (n, 28, 28), ``subset``,
        ``filename``, ``DESCR`` and ``test_to_mnist_test_index``: for each test
        image the index of the MNIST test image it was drawn from (so
        ``fetch_mnist(subset="test").target[index]`` labels the test set). It is
        ``None`` unless the subset is ``"test"`` and the file is the reference
        copy: it cannot be rebuilt from the ``.amat`` files. The source files
        carry no labels, so there is no ``target``.
    """
    _check_subset(subset, ("train", "valid", "test", "all"))
    arrays, path = load_dataset(BINARIZED_MNIST, data_home, download_if_missing)
    parts = ("train", "valid", "test") if subset == "all" else (subset,)
    data = np.concatenate(
        [_unpack(arrays[f"{p}_bits"], arrays["n_features"]) for p in parts]
    )
    index = arrays.get("test_to_mnist_test_index") if subset == "test" else None
    return Bunch(
        data=data,
        images=data.reshape(len(data), 28, 28),
        test_to_mnist_test_index=None if index is None else index.astype(np.int64),
        subset=subset,
        filename=str(path),
        DESCR=_BINARIZED_DESCR,
    )


def _csr(arrays, part, dtype):
    return sp.csr_matrix(
        (
            arrays[f"{part}_data"].astype(dtype),
            arrays[f"{part}_indices"].astype(np.int32),
            arrays[f"{part}_indptr"].astype(np.int32),
        ),
        shape=tuple(int(n) for n in arrays[f"{part}_shape"]),
    )


def fetch_20newsgroups_bow(
    *, data_home=None, dtype=np.float64, download_if_missing=True
):
    """20 Newsgroups as word counts over 2,000 words, the deep LDA paper's version.

    The data of Zhou et al.'s deep LDA / TLASGR-MCMC experiments (their
    ``20news_data.mat``): 11,284 training documents and 7,502 test documents,
    each test document's tokens already split into an observed part (about 79 %,
    to infer the document's latent variables) and a held-out part (about 21 %,
    for per-held-out-word perplexity). Read from ``data_home/20news_2000.npz``
    after checking it; when absent, built from the ``.mat`` in the authors'
    repository (github mingyuanzhou/DeepLDA_TLASGR_MCMC, pinned commit).

    Parameters
    ----------
    data_home : str or path-like, default=None
        See :func:`fetch_mnist`.
    dtype : dtype, default=np.float64
        dtype of the count matrices' values (integers either way).
    download_if_missing : bool, default=True
        If False, a missing file raises ``OSError`` instead of being downloaded.

    Returns
    -------
    data : Bunch
        ``train``, ``test_observed``, ``test_heldout``: CSR documents x words
        count matrices (``test_observed + test_heldout`` is the full test set);
        ``target_train``, ``target_test``: newsgroup 0..19 (the file's labels
        minus one, so that ``target_names[target]`` is the group);
        ``target_names`` (20), ``vocabulary`` (2,000, column order),
        ``filename``, ``DESCR``.
    """
    arrays, path = load_dataset(NEWS20, data_home, download_if_missing)
    return Bunch(
        train=_csr(arrays, "train", dtype),
        test_observed=_csr(arrays, "test_observed", dtype),
        test_heldout=_csr(arrays, "test_heldout", dtype),
        target_train=arrays["y_train"].astype(np.int64) - 1,
        target_test=arrays["y_test"].astype(np.int64) - 1,
        target_names=arrays["label_names"],
        vocabulary=arrays["vocabulary"],
        filename=str(path),
        DESCR=_20NEWS_DESCR,
    )


def fetch_caltech101_silhouettes(
    *, data_home=None, download_if_missing=True, return_X_y=False
):
    """CalTech 101 Silhouettes at 28 x 28 (Marlin et al., 2010), all 8,671 images.

    Read from ``data_home/caltech101_silhouettes_28_full.npz`` after checking
    it; when absent, built from Marlin's ``caltech101_silhouettes_28.mat``.
    The published train/validation/test split (``split1``) is not part of this
    file; :func:`caltech101_silhouettes_split` makes a seeded split of the same
    sizes (a different split, so figures are not directly comparable with
    papers that used ``split1``).

    Parameters
    ----------
    data_home : str or path-like, default=None
        See :func:`fetch_mnist`.
    download_if_missing : bool, default=True
        If False, a missing file raises ``OSError`` instead of being downloaded.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of the Bunch.

    Returns
    -------
    data : Bunch
        ``data`` (8671, 784) uint8 in {0, 1} with pixels in the source file's
        column-major order (1 is background); ``images`` (8671, 28, 28) the same
        pixels transposed so that objects stand upright; ``target`` class
        0..100 (the file's labels minus one); ``target_names`` (101);
        ``filename``, ``DESCR``.
    """
    arrays, path = load_dataset(CALTECH101_SILHOUETTES, data_home, download_if_missing)
    data = _unpack(arrays["X_bits"], arrays["n_features"])
    target = arrays["y"].astype(np.int64) - 1
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        images=data.reshape(len(data), 28, 28).transpose(0, 2, 1),
        target=target,
        target_names=arrays["classnames"],
        filename=str(path),
        DESCR=_CALTECH_DESCR,
    )


def caltech101_silhouettes_split(
    n_samples=8671, *, sizes=(4100, 2264, 2307), random_state=0
):
    """A seeded train / validation / test split of CalTech 101 Silhouettes.

    Stands in for Marlin et al.'s ``split1``, which is not available here. The
    default sizes are those of ``split1`` as the papers report them (Du, Zhu &
    Zhang, Table 1: 4,100 / 2,264 / 2,307; Gan et al. merge the first two into
    6,364 training images); the membership is a uniformly random permutation,
    so it is *not* ``split1``.

    Parameters
    ----------
    n_samples : int, default=8671
        Number of images to split (the full set by default).
    sizes : tuple of three ints, default=(4100, 2264, 2307)
        Sizes of the train, validation and test parts; they must sum to
        ``n_samples``.
    random_state : int, SeedSequence or Generator, default=0
        Seed of the permutation; the same int always gives the same split.

    Returns
    -------
    split : Bunch
        ``train``, ``valid``, ``test``: sorted int64 index arrays, disjoint,
        covering ``range(n_samples)``.
    """
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) != 3 or min(sizes) < 0 or sum(sizes) != n_samples:
        raise ValueError(
            f"sizes must be three non-negative ints summing to n_samples={n_samples}, "
            f"got {sizes}"
        )
    perm = as_generator(random_state).permutation(n_samples)
    bounds = np.cumsum(sizes)[:-1]
    train, valid, test = (np.sort(p).astype(np.int64) for p in np.split(perm, bounds))
    return Bunch(train=train, valid=valid, test=test)


_MNIST_DESCR = """\
MNIST handwritten digits
------------------------
70,000 grey-level images of 28 x 28 pixels (60,000 train, 10,000 test), labels
0-9, in the original order of LeCun, Cortes & Burges' idx files. Licence: CC
BY-SA 3.0 (as usually distributed).
"""

_BINARIZED_DESCR = """\
Binarized MNIST (Larochelle & Murray, 2011)
-------------------------------------------
A fixed stochastic binarization of MNIST (Salakhutdinov & Murray, 2008), split
into 50,000 train, 10,000 validation and 10,000 test images of 784 binary
pixels. The test set is ordered by digit; the files carry no labels.
"""

_20NEWS_DESCR = """\
20 Newsgroups, 2,000-word bag of words (deep LDA version)
---------------------------------------------------------
Document x word counts over a 2,000-word vocabulary: 11,284 training and 7,502
test documents; each test document is split into observed and held-out tokens
for per-held-out-word perplexity. Source: 20news_data.mat of Zhou, Cong & Chen's
deep LDA code (github mingyuanzhou/DeepLDA_TLASGR_MCMC, MIT licence).
"""

_CALTECH_DESCR = """\
CalTech 101 Silhouettes, 28 x 28 (Marlin, Swersky, Chen & de Freitas, 2010)
---------------------------------------------------------------------------
8,671 binary silhouettes of objects from the 101 CalTech 101 categories,
derived from the category outlines of Caltech 101. The full set; the published
split is not included (see caltech101_silhouettes_split).
"""
