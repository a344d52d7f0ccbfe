"""Writing files: an error names the file it was writing.

``open(path).write(...)`` failing on a full disk raises ``OSError(ENOSPC)`` with no file name
(the file was opened fine); :func:`naming` puts the path in, so that the command line can say
which file could not be written (:func:`shared.cli.main`).
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from pathlib import Path

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


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in NO_SPACE
