"""Readers of the public source formats and their conversion to the ``.npz`` layouts.

Each ``convert_*`` takes ``{source file name: path}`` and returns the dict of
arrays stored in the dataset's ``.npz`` (the layout of the reference files in
the team's ``shared/data`` folder: see its README). They check what they read
and raise ``ValueError`` naming the file on anything unexpected; the caller then
compares the content digest with the reference one.
"""

import gzip
import struct
import warnings
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

__all__ = [
    "convert_20news",
    "convert_binarized_mnist",
    "convert_caltech101_silhouettes",
    "convert_mnist",
    "read_amat",
    "read_idx",
]

_IDX_DTYPES = {0x08: "u1", 0x09: "i1", 0x0B: "i2", 0x0C: "i4", 0x0D: "f4", 0x0E: "f8"}


def _read_maybe_gzip(path):
    raw = Path(path).read_bytes()
    # Some mirrors serve the idx files already decompressed: look at the magic.
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw


def read_idx(path):
    """An array from an idx file (LeCun's MNIST format), gzipped or not.

    The header is two zero bytes, a type code, the number of dimensions, then
    each dimension as a big-endian uint32; the values follow in C order,
    big-endian.
    """
    raw = _read_maybe_gzip(path)
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path} is not an idx file (bad magic number {raw[:4]!r})")
    ndim = raw[3]
    offset = 4 + 4 * ndim
    if len(raw) < offset:
        raise ValueError(f"{path}: idx header truncated")
    shape = struct.unpack(f">{ndim}I", raw[4:offset])
    dtype = np.dtype(">" + _IDX_DTYPES[raw[2]])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - offset != expected:
        raise ValueError(
            f"{path}: idx header announces shape {shape} ({expected} bytes of "
            f"values) but {len(raw) - offset} bytes follow"
        )
    values = np.frombuffer(raw, dtype=dtype, offset=offset).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


def read_amat(path):
    """A 0/1 ``uint8`` matrix from a Larochelle ``.amat`` text file.

    One row per line, values ``0`` or ``1`` separated by blanks. Read with
    ``numpy.loadtxt`` (its C parser was 3x faster here than vectorised byte
    tests; see ``benchmarks/bench_datasets_load.py``), then checked: a ragged
    row, a non-integer token or a value other than 0/1 is an error. A MATLAB
    file holding the matrix as ``X`` is read too: some public copies (e.g. the
    one in github mingzhang-yin/ARM-gradient) are ``.mat`` files under the
    ``.amat`` name.
    """
    with open(path, "rb") as f:
        is_mat = f.read(19) == b"MATLAB 5.0 MAT-file"
    if is_mat:
        return _amat_from_mat(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            bits = np.loadtxt(path, dtype=np.uint8, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path} is not a 0/1 .amat matrix: {exc}") from exc
    if bits.size == 0:
        raise ValueError(f"{path}: no values")
    if bits.max() > 1:
        raise ValueError(f"{path}: values other than 0 and 1 (max {bits.max()})")
    return bits


def _amat_from_mat(path):
    try:
        mat = scipy.io.loadmat(path)
    except Exception as exc:  # noqa: BLE001 - scipy raises many kinds on bad files
        raise ValueError(f"{path} is not a readable MATLAB file: {exc}") from exc
    if "X" not in mat:
        raise ValueError(f"{path}: MATLAB file without a variable X")
    X = np.asarray(mat["X"])
    if X.ndim != 2 or not np.isin(X, (0, 1)).all():
        raise ValueError(f"{path}: X must be a 2-D 0/1 matrix, got shape {X.shape}")
    return X.astype(np.uint8)


def convert_mnist(paths):
    """``mnist.npz`` arrays from the four idx files."""
    out = {}
    for part, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(paths[f"{prefix}-images-idx3-ubyte.gz"])
        labels = read_idx(paths[f"{prefix}-labels-idx1-ubyte.gz"])
        if images.dtype != np.uint8 or images.ndim != 3:
            raise ValueError(
                f"MNIST {part} images: expected uint8 (n, 28, 28), got "
                f"{images.dtype} {images.shape}"
            )
        if labels.dtype != np.uint8 or labels.shape != images.shape[:1]:
            raise ValueError(
                f"MNIST {part} labels: expected uint8 ({len(images)},), "
                f"got {labels.dtype} {labels.shape}"
            )
        out[f"x_{part}"] = images
        out[f"y_{part}"] = labels
    return {k: out[k] for k in ("x_train", "y_train", "x_test", "y_test")}


def convert_binarized_mnist(paths):
    """``binarized_mnist_larochelle.npz`` arrays from the three ``.amat`` files.

    The reference file also holds ``test_to_mnist_test_index`` (which MNIST test
    image each binarized test image came from). It cannot be rebuilt from the
    ``.amat`` files alone, so a converted file does not have it.
    """
    out = {}
    n_features = None
    for part in ("train", "valid", "test"):
        bits = read_amat(paths[f"binarized_mnist_{part}.amat"])
        if n_features is None:
            n_features = bits.shape[1]
        elif bits.shape[1] != n_features:
            raise ValueError(
                f"binarized MNIST {part}: {bits.shape[1]} columns, "
                f"expected {n_features}"
            )
        out[f"{part}_bits"] = np.packbits(bits, axis=1)
    out["n_features"] = np.array(n_features, dtype=np.int64)
    return out


def _cell_strings(cell, what):
    """Python strings from a MATLAB cell array of char rows, as ``loadmat`` gives it."""
    strings = []
    for item in np.asarray(cell, dtype=object).ravel():
        item = np.asarray(item)
        if item.size == 0:
            strings.append("")
        elif item.dtype.kind == "U":
            strings.append("".join(str(s) for s in item.ravel()))
        else:
            raise ValueError(
                f"{what}: expected a cell array of strings, got {item.dtype}"
            )
    return np.array(strings)


def _as_small_uint(values, what, dtype=np.uint8):
    values = np.asarray(values)
    info = np.iinfo(dtype)
    if values.size and (
        not np.all(np.isfinite(values))
        or np.any(values != np.round(values))
        or values.min() < info.min
        or values.max() > info.max
    ):
        raise ValueError(f"{what}: expected integers in [{info.min}, {info.max}]")
    return values.astype(dtype)


def _csr_parts(matrix, prefix, what):
    """CSR parts of a words x documents MATLAB sparse matrix, documents as rows."""
    if not sp.issparse(matrix):
        raise ValueError(
            f"{what}: expected a sparse matrix, got {type(matrix).__name__}"
        )
    docs = sp.csr_matrix(matrix.T)
    docs.sum_duplicates()  # also sorts the column indices of each row
    if docs.shape[1] > np.iinfo(np.int16).max:
        raise ValueError(f"{what}: vocabulary of {docs.shape[1]} words is too large")
    return {
        f"{prefix}_data": _as_small_uint(docs.data, f"{what} counts"),
        f"{prefix}_indices": docs.indices.astype(np.int16),
        f"{prefix}_indptr": docs.indptr.astype(np.int32),
        f"{prefix}_shape": np.array(docs.shape, dtype=np.int64),
    }


def convert_20news(paths):
    """``20news_2000.npz`` arrays from the deep-LDA authors' ``20news_data.mat``.

    That file stores words x documents count matrices ``wordsTrain`` (training
    documents), ``wordsHeldout`` and ``wordsTest`` (the two parts of each test
    document), ``labelsTrain``, ``labelsTest`` (1..20), ``vocabulary`` and
    ``labelsToGroup`` (cell arrays of strings). Despite the names, the authors'
    demo infers test documents from ``wordsHeldout`` (about 79 % of the test
    tokens) and scores the perplexity on ``wordsTest``; so ``wordsHeldout`` is
    stored as ``test_observed`` and ``wordsTest`` as ``test_heldout`` (checked
    against the reference file: the token totals are 295,806 and 79,550).
    """
    path = paths["20news_data.mat"]
    try:
        mat = scipy.io.loadmat(path)
    except Exception as exc:  # noqa: BLE001 - scipy raises many kinds on bad files
        raise ValueError(f"{path} is not a readable MATLAB file: {exc}") from exc
    missing = {
        "wordsTrain",
        "wordsHeldout",
        "wordsTest",
        "labelsTrain",
        "labelsTest",
        "vocabulary",
        "labelsToGroup",
    } - set(mat)
    if missing:
        raise ValueError(f"{path} lacks the variables {sorted(missing)}")
    out = {}
    out.update(_csr_parts(mat["wordsTrain"], "train", f"{path}: wordsTrain"))
    out.update(
        _csr_parts(mat["wordsHeldout"], "test_observed", f"{path}: wordsHeldout")
    )
    out.update(_csr_parts(mat["wordsTest"], "test_heldout", f"{path}: wordsTest"))
    if out["test_observed_shape"][0] != out["test_heldout_shape"][0]:
        raise ValueError(f"{path}: wordsHeldout and wordsTest have different documents")
    out["y_train"] = _as_small_uint(mat["labelsTrain"].ravel(), f"{path}: labelsTrain")
    out["y_test"] = _as_small_uint(mat["labelsTest"].ravel(), f"{path}: labelsTest")
    out["vocabulary"] = _cell_strings(mat["vocabulary"], f"{path}: vocabulary")
    out["label_names"] = _cell_strings(mat["labelsToGroup"], f"{path}: labelsToGroup")
    if len(out["vocabulary"]) != out["train_shape"][1]:
        raise ValueError(
            f"{path}: vocabulary has {len(out['vocabulary'])} words, the "
            f"count matrices {out['train_shape'][1]}"
        )
    return out


def convert_caltech101_silhouettes(paths):
    """``caltech101_silhouettes_28_full.npz`` arrays from Marlin's ``.mat`` file.

    Reads ``X`` (one 0/1 image of 784 pixels per row, pixels in MATLAB's
    column-major order, kept as they are), ``Y`` (class 1..101) and
    ``classnames`` (cell array).
    """
    path = paths["caltech101_silhouettes_28.mat"]
    try:
        mat = scipy.io.loadmat(path)
    except Exception as exc:  # noqa: BLE001 - scipy raises many kinds on bad files
        raise ValueError(f"{path} is not a readable MATLAB file: {exc}") from exc
    missing = {"X", "Y", "classnames"} - set(mat)
    if missing:
        raise ValueError(f"{path} lacks the variables {sorted(missing)}")
    X = np.asarray(mat["X"])
    if X.ndim != 2 or not np.isin(X, (0, 1)).all():
        raise ValueError(f"{path}: X must be a 2-D 0/1 matrix, got shape {X.shape}")
    y = _as_small_uint(np.asarray(mat["Y"]).ravel(), f"{path}: Y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{path}: {X.shape[0]} images but {y.shape[0]} labels")
    return {
        "n_features": np.array(X.shape[1], dtype=np.int64),
        "X_bits": np.packbits(X.astype(np.uint8), axis=1),
        "y": y,
        "classnames": _cell_strings(mat["classnames"], f"{path}: classnames"),
    }
