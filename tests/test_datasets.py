"""Tests of skdgm.datasets: verified local reads, rejection of bad files, offline
errors, and the conversion of each public source format (on small fake files).

Everything here is exact (digests, shapes, array equality); nothing is random
except through fixed seeds.
"""

import gzip
import hashlib
import os
import shutil
import struct
import urllib.error
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from skdgm import datasets
from skdgm.datasets import (
    ChecksumError,
    _base,
    _convert,
    _fetchers,
    caltech101_silhouettes_split,
    fetch_20newsgroups_bow,
    fetch_binarized_mnist,
    fetch_caltech101_silhouettes,
    fetch_mnist,
    get_data_home,
)
from skdgm.datasets._base import content_sha256, file_sha256

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SPECS = {
    "mnist": _fetchers.MNIST,
    "binarized": _fetchers.BINARIZED_MNIST,
    "20news": _fetchers.NEWS20,
    "caltech": _fetchers.CALTECH101_SILHOUETTES,
}


def _need_shared(filename):
    if not (SHARED / filename).is_file():
        pytest.skip(f"{SHARED / filename} is absent")


def _offline(url, timeout=None):
    raise urllib.error.URLError("network is unreachable (test)")


@pytest.fixture
def no_network(monkeypatch):
    monkeypatch.setattr(_base, "_urlopen", _offline)


# ------------------------------------------------------------------ shared data
@pytest.mark.shared_data
@pytest.mark.parametrize("name", sorted(SPECS))
def test_reference_files_match_both_digests(name):
    # Ties the two constants of each spec to the same reference file.
    spec = SPECS[name]
    _need_shared(spec.filename)
    assert file_sha256(SHARED / spec.filename) == spec.sha256
    with np.load(SHARED / spec.filename, allow_pickle=False) as npz:
        assert content_sha256(npz, spec.content_keys) == spec.content_sha256


@pytest.mark.shared_data
def test_fetch_mnist_shared(no_network):
    _need_shared("mnist.npz")
    train = fetch_mnist(data_home=SHARED)
    assert train.data.shape == (60000, 784) and train.data.dtype == np.uint8
    assert train.images.shape == (60000, 28, 28)
    assert train.target.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(train.target, minlength=10) > 5000, True)
    test = fetch_mnist(data_home=SHARED, subset="test", dtype=np.float32)
    assert test.data.shape == (10000, 784) and test.data.dtype == np.float32
    assert 0.0 <= test.data.min() and test.data.max() == 1.0
    np.testing.assert_array_equal(test.target[:3], [7, 2, 1])
    X, y = fetch_mnist(data_home=SHARED, subset="test", return_X_y=True)
    assert X.shape == (10000, 784) and X.dtype == np.uint8
    np.testing.assert_array_equal(y, test.target)
    everything = fetch_mnist(data_home=SHARED, subset="all")
    assert everything.data.shape == (70000, 784)
    np.testing.assert_array_equal(everything.data[60000:], (test.data * 255).round())


@pytest.mark.shared_data
def test_fetch_binarized_mnist_shared(no_network):
    _need_shared("binarized_mnist_larochelle.npz")
    sizes = {"train": 50000, "valid": 10000, "test": 10000, "all": 70000}
    for subset, n in sizes.items():
        b = fetch_binarized_mnist(data_home=SHARED, subset=subset)
        assert b.data.shape == (n, 784) and b.data.dtype == np.uint8
        assert b.data.max() == 1 and b.data.min() == 0
        assert (b.test_to_mnist_test_index is not None) == (subset == "test")
    test = fetch_binarized_mnist(data_home=SHARED, subset="test")
    idx = test.test_to_mnist_test_index
    assert idx.shape == (10000,) and idx.min() >= 0 and idx.max() < 10000


@pytest.mark.shared_data
def test_fetch_20news_shared(no_network):
    _need_shared("20news_2000.npz")
    b = fetch_20newsgroups_bow(data_home=SHARED)
    assert b.train.shape == (11284, 2000) and sp.isspmatrix_csr(b.train)
    assert b.test_observed.shape == b.test_heldout.shape == (7502, 2000)
    # token totals from shared/data/README.md and the source file
    assert (b.train.sum(), b.test_observed.sum(), b.test_heldout.sum()) == (
        584661,
        295806,
        79550,
    )
    assert b.train.dtype == np.float64
    assert b.target_train.min() == 0 and b.target_train.max() == 19
    assert b.target_names[0] == "alt.atheism" and len(b.vocabulary) == 2000
    assert (np.asarray(b.test_heldout.sum(axis=1)).ravel() == 0).sum() == 30
    ints = fetch_20newsgroups_bow(data_home=SHARED, dtype=np.int32)
    assert ints.train.dtype == np.int32 and (ints.train != b.train).nnz == 0


@pytest.mark.shared_data
def test_fetch_caltech_shared(no_network):
    _need_shared("caltech101_silhouettes_28_full.npz")
    b = fetch_caltech101_silhouettes(data_home=SHARED)
    assert b.data.shape == (8671, 784) and b.data.max() == 1 and b.data.min() == 0
    assert b.target.min() == 0 and b.target.max() == 100 and len(b.target_names) == 101
    np.testing.assert_array_equal(b.images[5].T.ravel(), b.data[5])
    X, y = fetch_caltech101_silhouettes(data_home=SHARED, return_X_y=True)
    np.testing.assert_array_equal(X, b.data)
    np.testing.assert_array_equal(y, b.target)
    split = caltech101_silhouettes_split(len(b.data), random_state=0)
    assert [len(split[k]) for k in ("train", "valid", "test")] == [4100, 2264, 2307]


@pytest.mark.shared_data
def test_corrupted_copy_of_shared_file_is_rejected(tmp_path, no_network):
    spec = _fetchers.CALTECH101_SILHOUETTES
    _need_shared(spec.filename)
    raw = bytearray((SHARED / spec.filename).read_bytes())
    raw[len(raw) // 2] ^= 0x01  # inside the compressed pixels
    (tmp_path / spec.filename).write_bytes(bytes(raw))
    found = hashlib.sha256(raw).hexdigest()
    with pytest.raises(ChecksumError) as info:
        fetch_caltech101_silhouettes(data_home=tmp_path)
    msg = str(info.value)
    assert spec.filename in msg and spec.sha256 in msg and found in msg
    # rejected, not replaced: the bad file stays for the user to inspect
    assert (tmp_path / spec.filename).read_bytes() == bytes(raw)


# ----------------------------------------------------------- synthetic sources
def _write_idx(path, array, compress=True):
    code = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C}[array.dtype]
    header = b"\x00\x00" + bytes([code, array.ndim])
    header += struct.pack(f">{array.ndim}I", *array.shape)
    payload = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    path.write_bytes(gzip.compress(payload) if compress else payload)


def _write_amat(path, bits):
    path.write_text("".join(" ".join(map(str, row)) + " \n" for row in bits))


def _cell(strings):
    cell = np.empty((len(strings), 1), dtype=object)
    for i, s in enumerate(strings):
        cell[i, 0] = s
    return cell


@pytest.fixture
def sources(tmp_path):
    """Small fake copies of every public source file, and the arrays they encode."""
    rng = np.random.default_rng(0)
    server = tmp_path / "server"
    server.mkdir()
    expected = {}

    x_train = rng.integers(0, 256, size=(7, 28, 28), dtype=np.uint8)
    y_train = rng.integers(0, 10, size=7).astype(np.uint8)
    x_test = rng.integers(0, 256, size=(3, 28, 28), dtype=np.uint8)
    y_test = rng.integers(0, 10, size=3).astype(np.uint8)
    _write_idx(server / "train-images-idx3-ubyte.gz", x_train)
    _write_idx(server / "train-labels-idx1-ubyte.gz", y_train)
    # some mirrors serve the files decompressed under the same name
    _write_idx(server / "t10k-images-idx3-ubyte.gz", x_test, compress=False)
    _write_idx(server / "t10k-labels-idx1-ubyte.gz", y_test)
    expected["mnist"] = dict(
        x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test
    )

    bits = {
        p: (rng.random((n, 784)) < 0.3).astype(np.uint8)
        for p, n in (("train", 5), ("valid", 2), ("test", 3))
    }
    for part, b in bits.items():
        _write_amat(server / f"binarized_mnist_{part}.amat", b)
    expected["binarized"] = {
        f"{p}_bits": np.packbits(b, axis=1) for p, b in bits.items()
    }
    expected["binarized"]["n_features"] = np.array(784)
    expected["binarized_unpacked"] = bits

    vocab = ["ax", "writes", "article", "x", "god"]
    train = sp.random(6, 5, density=0.5, random_state=1, format="csr")
    train.data = np.ceil(train.data * 7)
    observed = sp.random(4, 5, density=0.5, random_state=2, format="csr")
    observed.data = np.ceil(observed.data * 3)
    heldout = sp.random(4, 5, density=0.3, random_state=3, format="csr")
    heldout.data = np.ceil(heldout.data * 2)
    scipy.io.savemat(
        server / "20news_data.mat",
        {
            "wordsTrain": sp.csc_matrix(train.T),
            "wordsHeldout": sp.csc_matrix(observed.T),
            "wordsTest": sp.csc_matrix(heldout.T),
            "labelsTrain": np.array([[1], [2], [20], [3], [1], [5]], dtype=np.uint8),
            "labelsTest": np.array([[4], [4], [2], [19]], dtype=np.uint8),
            "vocabulary": _cell(vocab),
            "labelsToGroup": _cell([f"g{i}" for i in range(20)]),
        },
    )
    expected["20news"] = dict(
        train=train,
        test_observed=observed,
        test_heldout=heldout,
        y_train=np.array([0, 1, 19, 2, 0, 4]),
        y_test=np.array([3, 3, 1, 18]),
        vocabulary=vocab,
    )

    X = (rng.random((9, 784)) < 0.5).astype(np.float64)
    Y = np.array([[1, 1, 2, 3, 3, 3, 2, 1, 3]], dtype=np.float64)
    scipy.io.savemat(
        server / "caltech101_silhouettes_28.mat",
        {
            "X": X,
            "Y": Y,
            "classnames": np.array([["Airplanes", "Faces 2", "ant"]], dtype=object),
        },
    )
    expected["caltech"] = dict(X=X.astype(np.uint8), y=Y.ravel().astype(np.int64) - 1)
    return server, expected


def _serve_from(server, log):
    def urlopen(url, timeout=None):
        log.append(url)
        name = url.rsplit("/", 1)[-1]
        if not (server / name).is_file():
            raise urllib.error.HTTPError(url, 404, "Not Found", None, None)
        return open(server / name, "rb")

    return urlopen


def _spec_accepting(spec, server, expected_arrays=None):
    """``spec`` with the content digest of what its converter makes of ``server``."""
    arrays = spec.convert({r.name: server / r.name for r in spec.remotes})
    return replace(
        spec, content_sha256=content_sha256(arrays, spec.content_keys)
    ), arrays


CASES = [
    ("mnist", "MNIST", lambda home: fetch_mnist(data_home=home, subset="all")),
    (
        "binarized",
        "BINARIZED_MNIST",
        lambda home: fetch_binarized_mnist(data_home=home, subset="all"),
    ),
    ("20news", "NEWS20", lambda home: fetch_20newsgroups_bow(data_home=home)),
    (
        "caltech",
        "CALTECH101_SILHOUETTES",
        lambda home: fetch_caltech101_silhouettes(data_home=home),
    ),
]


def _check_bunch(name, bunch, expected):
    if name == "mnist":
        e = expected["mnist"]
        np.testing.assert_array_equal(
            bunch.images, np.concatenate([e["x_train"], e["x_test"]])
        )
        np.testing.assert_array_equal(
            bunch.target, np.concatenate([e["y_train"], e["y_test"]])
        )
    elif name == "binarized":
        e = expected["binarized_unpacked"]
        np.testing.assert_array_equal(
            bunch.data, np.concatenate([e["train"], e["valid"], e["test"]])
        )
        assert bunch.data.shape == (10, 784)
    elif name == "20news":
        e = expected["20news"]
        for part in ("train", "test_observed", "test_heldout"):
            np.testing.assert_array_equal(bunch[part].toarray(), e[part].toarray())
        np.testing.assert_array_equal(bunch.target_train, e["y_train"])
        np.testing.assert_array_equal(bunch.target_test, e["y_test"])
        assert list(bunch.vocabulary) == e["vocabulary"]
        assert list(bunch.target_names) == [f"g{i}" for i in range(20)]
    else:
        e = expected["caltech"]
        np.testing.assert_array_equal(bunch.data, e["X"])
        np.testing.assert_array_equal(bunch.target, e["y"])
        assert list(bunch.target_names) == ["Airplanes", "Faces 2", "ant"]


@pytest.mark.parametrize("name, attr, fetch", CASES, ids=[c[0] for c in CASES])
def test_download_convert_store_then_read_locally(
    name, attr, fetch, sources, tmp_path, monkeypatch
):
    server, expected = sources
    spec, arrays = _spec_accepting(getattr(_fetchers, attr), server)
    monkeypatch.setattr(_fetchers, attr, spec)
    if name == "binarized":
        for key, value in expected["binarized"].items():
            np.testing.assert_array_equal(arrays[key], value)
    log = []
    monkeypatch.setattr(_base, "_urlopen", _serve_from(server, log))
    home = tmp_path / "home" / "nested"  # created on demand
    bunch = fetch(home)
    _check_bunch(name, bunch, expected)
    assert len(log) == len(spec.remotes)
    stored = home / spec.filename
    assert sorted(os.listdir(home)) == [spec.filename]  # no temp folder left
    # the stored file is accepted by its content digest, with the network gone
    monkeypatch.setattr(_base, "_urlopen", _offline)
    _check_bunch(name, fetch(home), expected)
    with np.load(stored) as npz:
        assert content_sha256(npz, spec.content_keys) == spec.content_sha256


@pytest.mark.parametrize("name, attr, fetch", CASES, ids=[c[0] for c in CASES])
def test_conversion_with_wrong_content_is_not_stored(
    name, attr, fetch, sources, tmp_path, monkeypatch
):
    # The fake sources are not the real data: the real content digest refuses them.
    server, _ = sources
    monkeypatch.setattr(_base, "_urlopen", _serve_from(server, []))
    home = tmp_path / "home"
    with pytest.raises(ChecksumError, match="content digest"):
        fetch(home)
    assert os.listdir(home) == []


def test_file_urls_through_the_real_opener(sources, tmp_path, monkeypatch):
    server, expected = sources
    spec, _ = _spec_accepting(_fetchers.CALTECH101_SILHOUETTES, server)
    spec = replace(
        spec,
        remotes=tuple(
            replace(
                r, urls=((server / "missing.mat").as_uri(), (server / r.name).as_uri())
            )
            for r in spec.remotes
        ),
    )  # the first mirror fails, the second serves
    monkeypatch.setattr(_fetchers, "CALTECH101_SILHOUETTES", spec)
    home = tmp_path / "home"
    _check_bunch("caltech", fetch_caltech101_silhouettes(data_home=home), expected)
    assert os.listdir(home) == [spec.filename]


def test_source_files_already_in_data_home_are_converted(
    sources, tmp_path, monkeypatch, no_network
):
    server, expected = sources
    spec, _ = _spec_accepting(_fetchers.MNIST, server)
    monkeypatch.setattr(_fetchers, "MNIST", spec)
    home = tmp_path / "home"
    home.mkdir()
    for remote in spec.remotes:
        shutil.copy(server / remote.name, home / remote.name)
    bunch = fetch_mnist(data_home=home, subset="all", download_if_missing=False)
    _check_bunch("mnist", bunch, expected)
    assert (home / spec.filename).is_file()
    assert len(os.listdir(home)) == len(spec.remotes) + 1  # sources kept, no temp left


def test_interrupted_download_leaves_nothing_usable(sources, tmp_path, monkeypatch):
    server, _ = sources
    spec, _ = _spec_accepting(_fetchers.MNIST, server)
    monkeypatch.setattr(_fetchers, "MNIST", spec)
    serve = _serve_from(server, [])

    def flaky(url, timeout=None):
        if "t10k-images" in url:
            raise ConnectionResetError("connection reset (test)")
        return serve(url, timeout)

    monkeypatch.setattr(_base, "_urlopen", flaky)
    home = tmp_path / "home"
    with pytest.raises(OSError, match="connection reset"):
        fetch_mnist(data_home=home)
    assert os.listdir(home) == []


def test_damaged_download_is_rejected_and_not_stored(sources, tmp_path, monkeypatch):
    server, _ = sources
    spec, _ = _spec_accepting(_fetchers.MNIST, server)
    monkeypatch.setattr(_fetchers, "MNIST", spec)
    name = server / "train-images-idx3-ubyte.gz"
    name.write_bytes(name.read_bytes()[:-20])  # a truncated transfer
    monkeypatch.setattr(_base, "_urlopen", _serve_from(server, []))
    home = tmp_path / "home"
    with pytest.raises(ChecksumError, match="could not be converted") as info:
        fetch_mnist(data_home=home)
    assert "train-images-idx3-ubyte.gz" in str(info.value)
    assert os.listdir(home) == []


def test_offline_and_absent_is_a_clear_error(tmp_path, no_network):
    with pytest.raises(OSError) as info:
        fetch_20newsgroups_bow(data_home=tmp_path)
    msg = str(info.value)
    spec = _fetchers.NEWS20
    assert spec.filename in msg and str(tmp_path) in msg and spec.sha256 in msg
    assert "network is unreachable" in msg and "SKDGM_DATA" in msg
    assert not isinstance(info.value, ChecksumError)
    assert os.listdir(tmp_path) == []


def test_download_if_missing_false_never_touches_the_network(tmp_path, monkeypatch):
    def forbidden(url, timeout=None):
        raise AssertionError("no download was allowed")

    monkeypatch.setattr(_base, "_urlopen", forbidden)
    with pytest.raises(OSError, match="download_if_missing=False"):
        fetch_binarized_mnist(data_home=tmp_path / "absent", download_if_missing=False)
    assert not (tmp_path / "absent").exists()


def _tiny_spec(keys=("a", "b")):
    arrays = {
        "a": np.arange(12, dtype=np.int16).reshape(3, 4),
        "b": np.array(["x", "yz"]),
    }
    return replace(
        _fetchers.MNIST,
        filename="tiny.npz",
        sha256="0" * 64,
        content_keys=keys,
        content_sha256=content_sha256(arrays, keys),
    ), arrays


def test_local_file_accepted_by_content_digest_and_bad_content_rejected(tmp_path):
    spec, arrays = _tiny_spec()
    extra = np.arange(3)  # an array outside the content digest
    np.savez(tmp_path / "tiny.npz", **arrays, c=extra)  # uncompressed
    loaded, _ = _base.load_dataset(spec, tmp_path, download_if_missing=False)
    np.testing.assert_array_equal(loaded["a"], arrays["a"])
    assert "c" not in loaded  # not covered by the check that accepted the file
    # with the whole file's digest matching, every array is trusted
    whole = replace(spec, sha256=file_sha256(tmp_path / "tiny.npz"))
    loaded, _ = _base.load_dataset(whole, tmp_path, download_if_missing=False)
    np.testing.assert_array_equal(loaded["c"], extra)
    raw = bytearray((tmp_path / "tiny.npz").read_bytes())
    raw[raw.find(np.int16(7).tobytes() + np.int16(8).tobytes())] ^= 0x40  # 7 -> 71
    (tmp_path / "tiny.npz").write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match="not a readable .npz"):  # zip CRC fails
        _base.load_dataset(spec, tmp_path, download_if_missing=False)
    # a sound archive holding other values (another version of the data)
    np.savez(tmp_path / "tiny.npz", a=arrays["a"] + 1, b=arrays["b"])
    with pytest.raises(ChecksumError, match="content digest"):
        _base.load_dataset(spec, tmp_path, download_if_missing=False)
    (tmp_path / "tiny.npz").write_bytes(b"not a zip file")
    with pytest.raises(ChecksumError, match="not a readable .npz"):
        _base.load_dataset(spec, tmp_path, download_if_missing=False)


def test_content_digest_properties():
    a = np.arange(20, dtype=np.uint8).reshape(4, 5)
    base = content_sha256({"a": a}, ("a",))
    assert content_sha256({"a": np.asfortranarray(a)}, ("a",)) == base
    assert content_sha256({"a": a.astype(">u2")}, ("a",)) == content_sha256(
        {"a": a.astype("<u2")}, ("a",)
    )
    assert content_sha256({"a": a.astype(np.int16)}, ("a",)) != base
    assert content_sha256({"a": a.reshape(5, 4)}, ("a",)) != base
    assert content_sha256({"b": a}, ("b",)) != base
    two = {"a": a, "b": a[:1]}
    assert content_sha256(two, ("a", "b")) != content_sha256(two, ("b", "a"))
    with pytest.raises(TypeError, match="object"):
        content_sha256({"a": np.array([None])}, ("a",))


# ------------------------------------------------------------ format readers
def test_read_idx_rejects_bad_files(tmp_path):
    path = tmp_path / "x.idx"
    _write_idx(path, np.arange(6, dtype=np.int32).reshape(2, 3), compress=False)
    np.testing.assert_array_equal(_convert.read_idx(path), np.arange(6).reshape(2, 3))
    assert _convert.read_idx(path).dtype == np.dtype("=i4")
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match="follow"):
        _convert.read_idx(path)
    path.write_bytes(b"\x01\x00\x08\x01\x00\x00\x00\x01\x05")
    with pytest.raises(ValueError, match="not an idx file"):
        _convert.read_idx(path)
    images = tmp_path / "i.gz"
    _write_idx(images, np.zeros((2, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match=r"uint8 \(n, 28, 28\)"):
        _convert.convert_mnist(
            {
                "train-images-idx3-ubyte.gz": images,
                "train-labels-idx1-ubyte.gz": images,
                "t10k-images-idx3-ubyte.gz": images,
                "t10k-labels-idx1-ubyte.gz": images,
            }
        )


@pytest.mark.parametrize(
    "text, match",
    [
        ("0 1 1\n1 0\n", "number of columns changed"),
        ("0 1 2\n", "other than 0 and 1"),
        ("0 0.5 1\n", "could not convert"),
        ("0 10 1\n", "other than 0 and 1"),
        ("0 -1 1\n", "could not convert"),
        ("\n\n", "no values"),
    ],
)
def test_read_amat_rejects_bad_files(tmp_path, text, match):
    (tmp_path / "bad.amat").write_text(text)
    with pytest.raises(ValueError, match=match):
        _convert.read_amat(tmp_path / "bad.amat")


def test_read_amat_variants(tmp_path):
    (tmp_path / "a.amat").write_bytes(b"0 1 1\r\n1\t0 0\r\n\r\n")
    np.testing.assert_array_equal(
        _convert.read_amat(tmp_path / "a.amat"), [[0, 1, 1], [1, 0, 0]]
    )
    # a MATLAB file under the .amat name, as in some public copies
    scipy.io.savemat(tmp_path / "m.amat", {"X": np.array([[1, 0], [0, 0]], np.uint8)})
    np.testing.assert_array_equal(
        _convert.read_amat(tmp_path / "m.amat"), [[1, 0], [0, 0]]
    )


def test_mat_converters_reject_bad_content(tmp_path):
    path = tmp_path / "c.mat"
    scipy.io.savemat(
        path,
        {
            "X": np.full((2, 4), 0.5),
            "Y": np.ones((1, 2)),
            "classnames": np.array([["a"]], dtype=object),
        },
    )
    with pytest.raises(ValueError, match="0/1 matrix"):
        _convert.convert_caltech101_silhouettes({"caltech101_silhouettes_28.mat": path})
    scipy.io.savemat(
        path,
        {
            "X": np.ones((2, 4)),
            "Y": np.array([[1.5, 1]]),
            "classnames": np.array([["a"]], dtype=object),
        },
    )
    with pytest.raises(ValueError, match="integers"):
        _convert.convert_caltech101_silhouettes({"caltech101_silhouettes_28.mat": path})
    scipy.io.savemat(path, {"wordsTrain": sp.csc_matrix(np.ones((3, 2)))})
    with pytest.raises(ValueError, match="lacks the variables"):
        _convert.convert_20news({"20news_data.mat": path})
    path.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not a readable MATLAB file"):
        _convert.convert_20news({"20news_data.mat": path})


# ------------------------------------------------------------ small helpers
def test_get_data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("SKDGM_DATA", str(tmp_path / "env"))
    assert get_data_home() == tmp_path / "env"
    assert get_data_home(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.delenv("SKDGM_DATA")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == tmp_path / "skdgm_data"
    assert get_data_home("~/d") == tmp_path / "d"
    assert not (tmp_path / "skdgm_data").exists()


def test_caltech_split():
    a = caltech101_silhouettes_split(random_state=3)
    b = caltech101_silhouettes_split(random_state=3)
    c = caltech101_silhouettes_split(random_state=4)
    for k in ("train", "valid", "test"):
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a.test, c.test)
    together = np.concatenate([a.train, a.valid, a.test])
    np.testing.assert_array_equal(np.sort(together), np.arange(8671))
    small = caltech101_silhouettes_split(10, sizes=(5, 3, 2))
    assert [len(small[k]) for k in ("train", "valid", "test")] == [5, 3, 2]
    with pytest.raises(ValueError, match="sum"):
        caltech101_silhouettes_split(10, sizes=(5, 3, 3))


def test_bad_arguments(tmp_path, no_network):
    with pytest.raises(ValueError, match="subset"):
        fetch_mnist(data_home=tmp_path, subset="valid")
    with pytest.raises(ValueError, match="subset"):
        fetch_binarized_mnist(data_home=tmp_path, subset="validation")
    with pytest.raises(ValueError, match="dtype"):
        fetch_mnist(data_home=tmp_path, dtype=np.complex64)


def test_public_names():
    assert set(datasets.__all__) >= {
        "fetch_mnist",
        "fetch_binarized_mnist",
        "fetch_20newsgroups_bow",
        "fetch_caltech101_silhouettes",
        "caltech101_silhouettes_split",
        "get_data_home",
        "ChecksumError",
    }
    assert issubclass(ChecksumError, OSError)
