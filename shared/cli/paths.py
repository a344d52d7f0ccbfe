"""Checks on the files a run will write, made before the first judge call.

A run must never overwrite its own input (the results would replace the data they came from),
and must not pay for every judge call only to fail at the end on a report it cannot write. Each
check names the path and says what is wrong, for an exit-2 usage error.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class PathProblem(Exception):
    """A path given to the run cannot be written (or would overwrite the input)."""


def same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` are one file: the same resolved path, or a hard/soft link."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _nearest_existing(path: Path) -> Path:
    probe = path.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def check_writable(path: Path, what: str) -> None:
    """Raise :class:`PathProblem` unless ``path`` can be created or replaced as a file."""
    if path.is_dir():
        raise PathProblem(f"the {what} path {path} is a folder; give a file name")
    folder = path.parent
    if not folder.is_dir():
        base = _nearest_existing(folder)
        if not base.is_dir():
            raise PathProblem(f"cannot write the {what} {path}: {base} is a file, not a folder")
        folder = base  # the run creates the missing folders below it
    try:  # the honest test: create and remove a file there (os.access lies for root)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise PathProblem(f"cannot write the {what} {path}: {exc.strerror or exc}") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise PathProblem(f"cannot write the {what} {path}: the file is read-only")


def check_distinct(inputs: dict[str, Path], outputs: dict[str, Path | None]) -> None:
    """Raise :class:`PathProblem` when an output is an input, or two outputs are one file (the
    same path, or a hard or soft link to it): writing one would destroy the other (a report
    written over the results, a cache over the paid answers)."""
    given = [(what, path) for what, path in outputs.items() if path is not None]
    for i, (what, path) in enumerate(given):
        for in_what, in_path in inputs.items():
            if same_file(path, in_path):
                raise PathProblem(
                    f"the {what} {path} is an input file ({in_what}); writing it would destroy "
                    "that input. Choose another path."
                )
        for other_what, other in given[:i]:
            if same_file(path, other):
                raise PathProblem(
                    f"the {what} {path} is the same file as the {other_what} {other}; one "
                    "would overwrite the other. Choose another path."
                )


def check_run_paths(inputs: dict[str, Path], targets: dict[str, Path | None]) -> None:
    """Check every path a command writes (``{"results file": path, ...}``; None = not written):
    none may be a file it reads (``inputs``: ``{"INPUT": path, "--questions file": path}``) or
    another of them, and each must be writable."""
    check_distinct(inputs, targets)
    for what, path in targets.items():
        if path is not None:
            check_writable(path, what)
