"""The ``summary-eval`` command: score a JSONL/CSV file of summaries with a progress bar, write a
results file and a self-contained HTML report, and resume interrupted runs.

Framework-free like the rest of ``shared`` (no ragas or deepeval import). Modules: ``inputs``
(reading rows), ``results`` (the results file), ``runner`` (bounded, resumable batch scoring),
``report`` (the HTML page), ``app`` (the typer command line).
"""

from __future__ import annotations


def main() -> None:
    """Console-script entry point (``summary-eval``)."""
    from .app import app

    app()


__all__ = ["main"]
