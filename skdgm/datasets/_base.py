"""Where data files live, how they are checked, and how a download is stored.

A dataset is one ``.npz`` file in ``data_home``. It is accepted in one of two
ways, and otherwise never used:

1. its SHA-256 equals the digest of the reference file (the copies kept in the
   team's ``shared/data`` folder, byte for byte), or
2. the arrays it holds have the expected *content digest* (:func:`content_sha256`),
   which is what a file converted here from the public source files has: the
   bytes of a re-compressed ``.npz`` depend on the zlib version, its arrays do not.

A download goes to a hidden temporary folder inside ``data_home``, is converted
and checked there, and only then is the ``.npz`` renamed into place
(``os.replace`` within one file system is atomic), so an interrupted or
corrupted download never leaves a file under the final name.
"""

import hashlib
import http.client
import io
import logging
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["ChecksumError", "content_sha256", "file_sha256", "get_data_home"]

logger = logging.getLogger("skdgm.datasets")

# Tests replace this to simulate being offline or to serve files from disk.
_urlopen = urllib.request.urlopen
_TIMEOUT = 60.0


class ChecksumError(OSError):
    """A data file, or the data converted from a download, is not the expected data.

    Raised when a file's digest is wrong, when it cannot be read, and when
    downloaded source files cannot be converted or convert to other data. The
    offending data is never returned; a download that fails is not stored.
    """


def get_data_home(data_home=None):
    """The folder the ``fetch_*`` functions read from and download into.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Used as is when given. Otherwise the ``SKDGM_DATA`` environment variable,
        and failing that ``~/skdgm_data``. ``~`` is expanded. The folder is not
        created here (it may be a read-only shared folder); a download creates it.

    Returns
    -------
    data_home : pathlib.Path
    """
    if data_home is None:
        data_home = os.environ.get("SKDGM_DATA") or Path("~") / "skdgm_data"
    return Path(os.fspath(data_home)).expanduser()


def file_sha256(path, chunk_size=1 << 20):
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            h.update(chunk)
    return h.hexdigest()


def content_sha256(arrays, keys):
    """Hex SHA-256 of the arrays ``arrays[k]`` for ``k`` in ``keys``, in that order.

    Each array contributes its key, dtype (little-endian spelling), shape and its
    bytes in C order, so the digest does not depend on the memory layout the
    arrays were stored with nor on how the ``.npz`` was compressed, but does
    change if a value, a dtype or a shape does.
    """
    h = hashlib.sha256()
    for key in keys:
        a = np.asarray(arrays[key])
        if a.dtype.hasobject:
            raise TypeError(f"array {key!r} has dtype object; cannot digest it")
        a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"), copy=False))
        h.update(f"{key}:{a.dtype.str}:{a.shape}\n".encode())
        h.update(memoryview(a).cast("B"))
    return h.hexdigest()


@dataclass(frozen=True)
class RemoteFile:
    """One public source file: its name in ``data_home`` and where to get it."""

    name: str
    urls: tuple


@dataclass(frozen=True)
class DatasetSpec:
    """What a dataset's ``.npz`` must contain and how to rebuild it from sources.

    ``convert`` maps ``{remote.name: path}`` to the dict of arrays stored in the
    ``.npz``; ``content_keys`` are the arrays covered by ``content_sha256``
    (arrays outside it are only trusted when the whole file's digest matched).
    """

    filename: str
    sha256: str
    content_keys: tuple
    content_sha256: str
    remotes: tuple
    convert: object = field(repr=False)


def _read_verified_npz(spec, path):
    """Arrays of ``path`` if it passes either check, else raise ChecksumError."""
    raw = Path(path).read_bytes()  # read once: what is checked is what is used
    found = hashlib.sha256(raw).hexdigest()
    if found == spec.sha256:
        # Lazy: arrays are decompressed when asked for, from the verified bytes
        # in memory (not from the file, which could change after the check).
        return np.load(io.BytesIO(raw), allow_pickle=False)
    arrays, content = None, None
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in spec.content_keys}
        content = content_sha256(arrays, spec.content_keys)
    except Exception:  # noqa: BLE001 - any damage to the archive means "reject"
        content = None
    if content == spec.content_sha256:
        return arrays
    raise ChecksumError(
        f"{path} failed its SHA-256 check: expected {spec.sha256}, found {found}"
        + (
            f" (nor do its arrays have the content digest {spec.content_sha256}; "
            f"found {content})"
            if content is not None
            else " (and it is not a readable .npz with the expected arrays)"
        )
        + ". The file is corrupted or is not the expected version, and was not "
        "used. Delete it so that it is downloaded again, or replace it with a "
        "good copy."
    )


def _download(remote, folder):
    """Copy ``remote`` into ``folder``, trying its URLs in turn; return the path."""
    target = Path(folder) / remote.name
    errors = []
    for url in remote.urls:
        logger.info("Downloading %s", url)
        try:
            with _urlopen(url, timeout=_TIMEOUT) as response, open(target, "wb") as out:
                shutil.copyfileobj(response, out)
            return target
        except (OSError, http.client.HTTPException) as exc:
            # URLError, HTTPError and timeouts are OSErrors; a connection dropped
            # mid-body is an IncompleteRead (HTTPException).
            errors.append(f"{url}: {type(exc).__name__}: {exc}")
    raise OSError("; ".join(errors))


def _not_found_message(spec, data_home, reason):
    sources = "; ".join(f"{r.name} <{r.urls[0]}>" for r in spec.remotes)
    return (
        f"{spec.filename} is not in {data_home} and {reason}. To work offline, "
        f"copy {spec.filename} (SHA-256 {spec.sha256}) into {data_home}, or point "
        f"data_home (or the SKDGM_DATA environment variable) at a folder that holds "
        f"it; or put the public source files there under these names, and they "
        f"will be converted: {sources}."
    )


def load_dataset(spec, data_home=None, download_if_missing=True):
    """The verified arrays of ``spec``'s ``.npz``, downloading it if needed.

    Parameters
    ----------
    spec : DatasetSpec
    data_home : str or path-like, default=None
        See :func:`get_data_home`.
    download_if_missing : bool, default=True
        When the ``.npz`` is absent: build it from source files already in
        ``data_home`` if all are there, else download them (if allowed).

    Returns
    -------
    arrays : mapping of str to ndarray
        All arrays of a file whose SHA-256 matched (a lazy ``NpzFile`` over the
        verified bytes); only ``spec.content_keys`` of a file accepted by its
        content digest.
    path : pathlib.Path
    """
    data_home = get_data_home(data_home)
    path = data_home / spec.filename
    if path.exists():
        return _read_verified_npz(spec, path), path

    local = {r.name: data_home / r.name for r in spec.remotes}
    have_sources = all(p.is_file() for p in local.values())
    if not have_sources and not download_if_missing:
        raise OSError(_not_found_message(spec, data_home, "download_if_missing=False"))

    data_home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".skdgm-download-", dir=data_home) as tmp:
        if not have_sources:
            local = {}
            for remote in spec.remotes:
                try:
                    local[remote.name] = _download(remote, tmp)
                except OSError as exc:
                    raise OSError(
                        _not_found_message(
                            spec, data_home, f"downloading it failed ({exc})"
                        )
                    ) from exc
        try:
            arrays = spec.convert(local)
        except Exception as exc:  # noqa: BLE001 - truncated gzip, bad .mat, ...
            raise ChecksumError(
                f"the source files {', '.join(map(str, local.values()))} could not be "
                f"converted to {spec.filename} ({type(exc).__name__}: {exc}); they are "
                f"damaged or not the expected files, and nothing was stored."
            ) from exc
        found = content_sha256(arrays, spec.content_keys)
        if found != spec.content_sha256:
            raise ChecksumError(
                f"the data converted from {', '.join(map(str, local.values()))} "
                f"has content digest {found}, expected {spec.content_sha256}; it "
                f"differs from the reference {spec.filename} and was not stored."
            )
        staged = Path(tmp) / spec.filename
        np.savez_compressed(staged, **arrays)
        os.replace(staged, path)
    logger.info("Stored %s", path)
    return {key: arrays[key] for key in spec.content_keys}, path
