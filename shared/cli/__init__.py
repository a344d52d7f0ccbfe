"""The ``summary-eval`` command: score a JSONL/CSV file of summaries with a progress bar, write a
results file and a self-contained HTML report, and resume interrupted runs.

Framework-free like the rest of ``shared`` (no ragas or deepeval import). Modules: ``inputs``
(reading rows), ``results`` (the results file), ``runner`` (bounded, resumable batch scoring),
``report`` (the HTML page), ``app`` (the typer command line).
"""

from __future__ import annotations

import os
import sys
from typing import Any

EXIT_USAGE = 2


class _PipeSafe:
    """stdout that a reader may close (``summary-eval score … | head -c0``): the first write
    after the close points the descriptor at /dev/null and the run goes on quietly, as the
    standard Unix tools do. The results and the report are written all the same."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed_by_reader = False

    def _gone(self) -> None:
        self.closed_by_reader = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text: str) -> int:
        if self.closed_by_reader:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        if self.closed_by_reader:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main() -> None:
    """Console-script entry point (``summary-eval``).

    A full disk ends the run with one line naming the file and exit 2 (the rows already written
    are kept, and the same command finishes the run); a reader that closes stdout is not an
    error (exit 0, nothing printed about it)."""
    if sys.argv[1:] == ["--version"]:  # answered before the commands (and what they use) load
        from .._version import __version__

        print(f"summary-eval {__version__}")
        return
    from ..core.files import is_disk_full
    from .app import app

    stdout = _PipeSafe(sys.stdout)
    sys.stdout = stdout
    try:
        app()
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        from .terminal import plain

        where = exc.filename or "a file this run writes"
        print(
            f"error: no space left on the device writing {plain(where)}; the rows already "
            "written "
            "are kept: free some space and run the same command again to finish",
            file=sys.stderr,
        )
        sys.exit(EXIT_USAGE)
    finally:
        stdout.flush()  # a reader gone by now is not an error either
        sys.stdout = stdout._stream  # (its descriptor is /dev/null if the reader went away)


__all__ = ["main"]
