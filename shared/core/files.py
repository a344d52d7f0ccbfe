"""Reading and writing files: the one bounded reader and the one masking writer.

Reading: a file the project reads (inputs, results, questions, labels, bench data) is opened by
:func:`open_regular` (or read whole by :func:`read_regular`): anything that is not a regular
file (a FIFO with no writer would hang the reader, a link to ``/dev/zero`` would feed it
forever, a directory) is refused with :class:`NotRegularFile`, and a file over
:data:`MAX_READ_BYTES` with :class:`TooLarge` (both ``OSError``s naming the file). Its JSON is
parsed by :func:`shared.core.bounded_json.loads`.

Writing: every file the project writes goes through :func:`write_json`, :func:`write_text`,
:func:`replacing` or :func:`open_for_writing`, which mask the secrets known to this process
(:func:`shared.core.redact.scrub`) in everything written, whatever it was read from (a results
file of an older version, a question quoting the source). Each names its file in an error:
``open(path).write(...)`` failing on a full disk raises ``OSError(ENOSPC)`` with no file name
(the file was opened fine); :func:`naming` puts the path in, so that the command line can say
which file could not be written (:func:`shared.cli.main`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from .redact import known_secrets, scrub

NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
"""The errors of a full disk (or a full quota)."""


@contextlib.contextmanager
def naming(path: str | Path) -> Iterator[None]:
    """Re-raise an ``OSError`` that names no file as one naming ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


MAX_READ_BYTES = 1 << 30
"""The largest file read (1 GiB): far above any results or questions file a run makes, far
below what would exhaust a machine's memory."""


class NotRegularFile(OSError):
    """A path to read that is not a regular file (a FIFO, a device, a directory, a socket)."""


class TooLarge(OSError):
    """A file to read larger than its reader's bound."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


@contextlib.contextmanager
def open_regular(
    path: str | os.PathLike[str],
    *,
    limit: int = MAX_READ_BYTES,
    encoding: str = "utf-8",
    errors: str = "strict",
    newline: str | None = None,
) -> Iterator[TextIO]:
    """The text of the regular file ``path`` (a link is followed), opened to read: anything
    else is refused (:class:`NotRegularFile`) before a byte is read, and so is a file over
    ``limit`` bytes (:class:`TooLarge`). Opened without blocking, so a FIFO with no writer is
    refused rather than waited on."""
    where = os.fspath(path)
    fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(errno.EINVAL, f"{_kind(info.st_mode)}, not a file", where)
        if info.st_size > limit:
            raise TooLarge(errno.EFBIG, f"{info.st_size} bytes; at most {limit} are read", where)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        raw = os.fdopen(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    with io.TextIOWrapper(
        _Bounded(raw, limit), encoding=encoding, errors=errors, newline=newline
    ) as handle:
        yield handle


class _Bounded(io.RawIOBase):
    """A binary file that ends after ``limit`` bytes (a file that grows while read)."""

    def __init__(self, raw: io.BufferedReader, limit: int) -> None:
        self._raw, self._left = raw, limit + 1

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._left <= 0:
            raise TooLarge(errno.EFBIG, "grew past its bound while read", self._raw.name)
        view = memoryview(buffer)[: self._left]
        count = self._raw.readinto(view) or 0
        self._left -= count
        return count

    def close(self) -> None:
        self._raw.close()
        super().close()


def read_regular(
    path: str | os.PathLike[str],
    *,
    limit: int = MAX_READ_BYTES,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> str:
    """The whole text of the regular file ``path``, by :func:`open_regular`'s rules."""
    with open_regular(path, limit=limit, encoding=encoding, errors=errors) as handle:
        return handle.read()


class _Masked(io.TextIOBase):
    """A text handle that masks the process's known secrets in everything written to it."""

    def __init__(self, handle: TextIO) -> None:
        self._handle = handle

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:  # type: ignore[override]
        secrets = known_secrets()
        self._handle.write(scrub(text) if secrets else text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:  # type: ignore[override]
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self._handle.closed:
            self._handle.flush()

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()  # flushes
        finally:
            self._handle.close()


def open_for_writing(
    path: str | os.PathLike[str], mode: str = "a", newline: str | None = None
) -> TextIO:
    """``path`` opened as UTF-8 text to append (``"a"``) or create (``"x"``, an existing file
    refused), every write masked of the known secrets."""
    if mode not in ("a", "x"):
        raise ValueError(f"mode must be 'a' or 'x', got {mode!r}")
    with naming(path):
        return _Masked(open(path, mode, encoding="utf-8", newline=newline))  # type: ignore[return-value]


@contextlib.contextmanager
def appending(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """:func:`open_for_writing` to append, closed when the block ends; errors name ``path``."""
    with naming(path), contextlib.closing(open_for_writing(path, "a")) as handle:
        yield handle


@contextlib.contextmanager
def replaced_path(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` for the block to write, moved over ``path`` when the
    block ends: an error (a full disk) leaves ``path`` as it was, removes the temporary file and
    names ``path``. The new file is readable like any other (``mkstemp`` makes it private)."""
    with naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(fd)
        try:
            yield Path(tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


@contextlib.contextmanager
def replacing(path: Path, *, newline: str | None = None) -> Iterator[TextIO]:
    """:func:`replaced_path` for a UTF-8 text file: the handle to write it through."""
    with replaced_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline=newline) as handle:
        yield _Masked(handle)  # type: ignore[misc]


def write_text(path: Path, text: str) -> None:
    """``text`` in the UTF-8 file ``path`` (its folder made), the known secrets masked, the
    error naming it."""
    with naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(scrub(text), encoding="utf-8")


def write_json(path: Path, payload: Any) -> None:
    """``payload`` as indented UTF-8 JSON in ``path`` (its folder made), the known secrets
    masked, the error naming it."""
    write_text(path, json.dumps(scrub(payload), indent=2, ensure_ascii=False) + "\n")


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in NO_SPACE
