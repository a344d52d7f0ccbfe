"""Writing files: an error names the file it was writing.

``open(path).write(...)`` failing on a full disk raises ``OSError(ENOSPC)`` with no file name
(the file was opened fine); :func:`naming` puts the path in, so that the command line can say
which file could not be written (:func:`shared.cli.main`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

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
        yield handle


def write_json(path: Path, payload: Any) -> None:
    """``payload`` as indented UTF-8 JSON in ``path`` (its folder made), the error naming it."""
    with naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in NO_SPACE
