"""``summary-eval check-judge``: probe an OpenAI-compatible judge before a run pays for it, and
the reachability check ``score`` runs before scoring.

Exit status: 0 usable, 1 usable with caveats (each with what to change), 2 not usable.
"""

from __future__ import annotations

import asyncio

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..evaluation.options import DEFAULT_TIMEOUT
from ..judge.check import acheck_judge, check_reachable
from . import flags
from .terminal import console, literal, plain

err = console(stderr=True)
out = console()

STYLE = {"ok": "green", "caveat": "yellow", "fail": "bold red"}


def check_judge_command(
    base_url: flags.BaseUrl = None,
    model: flags.Model = None,
    timeout: flags.Timeout = DEFAULT_TIMEOUT,
    api_key: flags.ApiKey = None,
) -> None:
    """Check a judge: reachable, structured mode, context window, latency, a known answer."""
    from ..judge.openai import OpenAIJudge

    try:
        # max_tokens: a probe, not a run; a grammar-bound small model may otherwise write on
        # until the context is full
        judge = OpenAIJudge(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=1,
            max_tokens=512,
        )
    except ValueError as exc:
        from .terminal import _in_flags

        err.print(f"[bold red]error:[/] cannot configure the judge: {literal(_in_flags(str(exc)))}")
        raise typer.Exit(2) from None
    result = asyncio.run(acheck_judge(judge, timeout=min(timeout, 10.0)))
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        title=Text(plain(f"{judge.model_id} at {judge.base_url}")),
    )
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("found")
    table.add_column("what to change")
    for line in result.lines:
        style = STYLE[line.status]
        table.add_row(
            line.name,
            f"[{style}]{line.status}[/]",
            Text(plain(line.detail)),
            Text(plain(line.advice)),
        )
    out.print(table)
    verdict = {0: "usable", 1: "usable, with caveats", 2: "not usable"}[result.exit_code]
    err.print(f"Judge {literal(verdict)}.")
    raise typer.Exit(result.exit_code)


def ensure_reachable(base_url: str, api_key: str | None, timeout: float) -> str | None:
    """Why the judge's server cannot be used, or None; run by ``score`` before any row."""
    return asyncio.run(check_reachable(base_url, api_key, timeout=min(timeout, 10.0)))
