"""The rules of docs/ARCHITECTURE.md's "Files and the terminal", read from the package's source:
every file the project reads goes through one bounded reader, every file it writes through one
masking writer, every line it prints through one escaping helper.

The test lists every reader, writer and printer in ``shared/`` (the calls that open, read, parse,
write or print), and fails on any that is not one of the helpers nor listed below with the
reason it may differ. A new ``open(``, ``json.loads(`` or ``err.print(f"... {user_text}")``
anywhere fails it until it goes through the helpers."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "shared"

HELPERS = {
    "core/files.py": "the bounded reader (open_regular, read_regular) and the masking writers",
    "core/bounded_json.py": "the bounded JSON reader (loads)",
    "cli/terminal.py": "the escaping helper (plain, literal)",
}
"""The modules that are the helpers: the one place each raw call may be made."""

IO_EXCEPTIONS = {
    ("cli/__init__.py", "_PipeSafe._gone"): "opens /dev/null to point a closed stdout at it",
    ("cli/report.py", "report_template"): "reads the package's own template, not a user's file",
    ("runs/runner.py", "run_settings"): "a JSON round trip of the run's own settings in memory",
    ("testing/stub.py", "_Handler.do_POST"): "the test server parses a request it bounds itself",
    ("prompts/builders.py", "read_grade_item"): "the fake judge reads the ITEMS line our own "
    "prompt wrote (prompts imports nothing of the package, so not bounded_json)",
}
"""Raw file or JSON calls outside the helpers, each with why it needs no helper."""

PRINT_EXCEPTIONS = {
    ("cli/common.py", "_print_table"): "table.results_table(...): a rich Table whose text "
    "cells are plain()",
    ("cli/check_judge.py", "check_judge_command"): "a rich Table of the check's own findings",
    ("cli/compare_cli.py", "_print_comparison"): "a rich Table of numbers, its names literal()",
    ("cli/compare_cli.py", "_print_agreement"): "a rich Table of numbers, its names literal()",
    ("cli/bench_cli.py", "print_result"): "rich Tables of bench's numbers and its own metric "
    "and rating names",
    ("cli/__init__.py", "main"): "--version prints the package's own version constant, before "
    "anything (the escaping helper included) is imported",
}
"""Printers whose argument is a rich renderable built elsewhere (a table), each with why its
text is escaped where it is built."""

SAFE_CALLS = frozenset({"plain", "literal", "len", "int", "round", "sum", "min", "max"})
"""Calls whose value may be printed as it is: the escaping helpers, and numbers."""

IO_ATTRS = frozenset({"open", "read_text", "read_bytes", "write_text", "write_bytes"})


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _calls(tree: ast.Module) -> Iterator[tuple[str, ast.Call]]:
    """Every call of the module with the function it is in: ``function`` or ``Class.method``
    (a function nested in a function is listed under the outer one)."""

    def walk(node: ast.AST, scope: str, in_function: bool) -> Iterator[tuple[str, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            inner, function = scope, in_function
            if isinstance(child, ast.ClassDef) and not in_function:
                inner = f"{scope}.{child.name}" if scope else child.name
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and not in_function:
                inner, function = (f"{scope}.{child.name}" if scope else child.name), True
            if isinstance(child, ast.Call):
                yield scope or "<module>", child
            yield from walk(child, inner, function)

    yield from walk(tree, "", False)


def _kind(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open":
        return "io"
    if isinstance(func, ast.Attribute):
        if func.attr in IO_ATTRS:
            return "io"
        if func.attr in ("load", "loads") and isinstance(func.value, ast.Name):
            return "io" if func.value.id == "json" else None
        if func.attr in ("print", "echo"):
            return "print"
    if isinstance(func, ast.Name) and func.id == "print":
        return "print"
    return None


def _safe(node: ast.AST) -> bool:
    """Whether a printed argument is program text or escaped: a string literal, an f-string or
    ``+`` of them whose every value is escaped or a number, ``Text(...)`` of such parts."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(_safe(part) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        numeric = node.format_spec is not None and node.conversion == -1
        return numeric or _safe(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _safe(node.left) and _safe(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub | ast.Div | ast.FloorDiv):
        return True  # arithmetic: a number (strings have no minus)
    if isinstance(node, ast.Tuple):  # Text.assemble's (text, style)
        return all(_safe(e) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _safe(node.body) and _safe(node.orelse)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in SAFE_CALLS:
            return True
        if name in ("Text", "assemble"):
            return all(_safe(arg) for arg in node.args)
    return False


def _sites(kind: str) -> list[tuple[str, str, int, bool]]:
    """(module, function, line, goes through the helpers) of every call of ``kind``."""
    found = []
    for module, tree in _modules():
        for scope, call in _calls(tree):
            if _kind(call) != kind:
                continue
            ok = module in HELPERS or (kind == "print" and all(_safe(a) for a in call.args))
            found.append((module, scope, call.lineno, ok))
    return found


@pytest.mark.parametrize(
    ("kind", "exceptions"), [("io", IO_EXCEPTIONS), ("print", PRINT_EXCEPTIONS)]
)
def test_every_reader_writer_and_printer_goes_through_the_helpers(
    kind: str, exceptions: dict[tuple[str, str], str]
) -> None:
    sites = _sites(kind)
    assert sites, "the scan found no call at all: it is broken"
    stray = [
        f"shared/{module}:{line} in {scope}"
        for module, scope, line, ok in sites
        if not ok and (module, scope) not in exceptions
    ]
    assert not stray, (
        f"{kind} calls outside the helpers ({', '.join(HELPERS)}); use them, or list the call "
        f"with its reason: {stray}"
    )
    used = {(module, scope) for module, scope, _, ok in sites if not ok}
    assert not set(exceptions) - used, f"listed but gone: {sorted(set(exceptions) - used)}"


def test_the_scan_catches_a_raw_reader_and_an_unescaped_printer() -> None:
    tree = ast.parse(
        "def f(path, row):\n"
        "    data = json.loads(path.read_text())\n"
        "    err.print(f'id {row.id}')\n"
        "    err.print(f'id {literal(row.id)}: {len(row)} of {row.n:d}')\n"
        "    out.print(Text(plain(row.id), style='red'))\n"
    )
    kinds = [(_kind(call), all(_safe(a) for a in call.args)) for _, call in _calls(tree)]
    assert [kind for kind, _ in kinds].count("io") == 2  # json.loads, read_text
    prints = [safe for kind, safe in kinds if kind == "print"]
    assert prints == [False, True, True]


def test_the_helpers_are_named_in_the_architecture() -> None:
    text = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for name in ("open_regular", "read_regular", "bounded_json.loads", "write_json", "plain"):
        assert f"`{name}" in text, name
    assert "tests/test_file_rules.py" in text
