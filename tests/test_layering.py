"""The package's layering rules (docs/ARCHITECTURE.md), read from its import graph.

The graph is read from the source (every ``import`` and ``from ... import``, those inside
functions included; imports under ``if TYPE_CHECKING:`` do not run and are left out), so the
test imports nothing heavy and fails on a rule broken anywhere, not only on a path a test runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("shared", "ragas_ext", "deepeval_ext")
MAX_LINES = 600
MAX_FUNCTION_LINES = 120


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _package_of(name: str) -> list[str]:
    parts = name.split(".")
    return parts if MODULES[name].name == "__init__.py" else parts[:-1]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that runs, at any depth (TYPE_CHECKING blocks skipped)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imports_of(name: str) -> set[str]:
    """The package modules ``name`` imports. ``from X import y``: X.y when that is a module
    (then X itself only if X is not a package ``name`` lives in, whose ``__init__`` is already
    running), else X."""
    package = _package_of(name)
    targets: set[str] = set()
    for node in _import_nodes(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
            continue
        if node.level:
            base = package[: len(package) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        ancestor = name == module or name.startswith(module + ".")
        for alias in node.names:
            sub = f"{module}.{alias.name}"
            if sub in MODULES:
                targets.add(sub)
                if not ancestor:
                    targets.add(module)
            elif not ancestor or name != module:
                targets.add(module)
    return {target for target in targets if target in MODULES and target != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_nothing_outside_the_cli_imports_the_cli() -> None:
    offenders = {
        name: sorted(t for t in targets if _in(t, "shared.cli"))
        for name, targets in GRAPH.items()
        if not _in(name, "shared.cli")
    }
    assert {name: t for name, t in offenders.items() if t} == {}


def test_the_core_never_imports_the_adapter_kit() -> None:
    """The kit is for the adapters (ragas_ext, deepeval_ext) and the CLI; the core gives it
    what it re-exports, never the other way round."""
    core = [
        name
        for name in GRAPH
        if _in(name, "shared") and not _in(name, "shared.cli") and name != "shared.adapter_kit"
    ]
    assert sorted(name for name in core if "shared.adapter_kit" in GRAPH[name]) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycle_inside_shared() -> None:
    shared = {
        name: {t for t in targets if _in(t, "shared")}
        for name, targets in GRAPH.items()
        if _in(name, "shared")
    }
    assert _cycles(shared) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_in_shared_is_over_600_lines() -> None:
    long = {
        name: lines
        for name, path in MODULES.items()
        if _in(name, "shared")
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def _long_functions(source: str, limit: int) -> dict[str, int]:
    """The functions (methods and nested ones too) of ``source`` over ``limit`` lines, counted
    from the ``def`` line to the last line, decorators aside."""
    long: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}."
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                if lines > limit:
                    long[name[:-1]] = lines
            visit(child, name)

    visit(ast.parse(source), "")
    return long


def test_no_function_in_shared_is_over_120_lines() -> None:
    long = {
        f"{name}:{function}": lines
        for name, path in MODULES.items()
        if _in(name, "shared")
        for function, lines in _long_functions(
            path.read_text(encoding="utf-8"), MAX_FUNCTION_LINES
        ).items()
    }
    assert long == {}


def test_the_function_counter_finds_a_long_method_and_a_long_nested_function() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(3))
    source = (
        "class A:\n    @staticmethod\n    def long(\n        a,\n    ):\n"
        + body.replace("    ", "        ")
        + "def outer():\n    async def inner():\n"
        + body.replace("    ", "        ")
        + "def short():\n    pass\n"
    )
    # A.long: the def line, a parameter, the closing parenthesis and three of body (its
    # decorator aside): 6
    assert _long_functions(source, 2) == {"A.long": 6, "outer": 5, "outer.inner": 4}
    assert _long_functions(source, 5) == {"A.long": 6}


ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
LOOSE_TOP = {"shared", "shared._version", "shared.adapter_kit"}
"""The modules at the top of shared/: the face, the version and the adapters' kit."""


def layer_table() -> dict[str, set[str]]:
    """docs/ARCHITECTURE.md's layer table: folder -> the folders it may import."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = text.split("<!-- layers -->", 1)[1].strip().split("\n\n", 1)[0].splitlines()[2:]
    table: dict[str, set[str]] = {}
    for row in rows:
        folder, allowed = (cell.strip() for cell in row.strip().strip("|").split("|"))
        table[folder.strip("`")] = {a.strip().strip("`") for a in allowed.split(",") if a.strip()}
    return table


def folder_of(name: str) -> str | None:
    """``shared.judge.openai`` -> ``judge``; None for the loose top modules and the adapters."""
    parts = name.split(".")
    if parts[0] != "shared" or name in LOOSE_TOP:
        return None
    return parts[1]


def folder_arrows() -> dict[str, set[str]]:
    arrows: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        source = folder_of(name)
        if source is None:
            continue
        for target in targets:
            goal = folder_of(target)
            if goal is not None and goal != source:
                arrows.setdefault(source, set()).add(goal)
    return arrows


def test_the_layer_table_names_every_folder() -> None:
    folders = {p.name for p in (ROOT / "shared").iterdir() if (p / "__init__.py").is_file()}
    assert set(layer_table()) == folders


def test_no_import_goes_against_the_layer_table() -> None:
    table = layer_table()
    against = {
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if (source := folder_of(name)) not in (None, "cli")
        and (goal := folder_of(target)) not in (None, source)
        and goal not in table[source]
    }
    # the loose top modules: only the CLI and the adapters use the face and the kit
    against |= {
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if folder_of(name) not in (None, "cli") and target in ("shared", "shared.adapter_kit")
    }
    assert sorted(against) == []


def test_no_cycle_between_folders() -> None:
    arrows = folder_arrows()
    assert _cycles({f: arrows.get(f, set()) for f in layer_table()}) == []


def test_the_top_of_shared_is_the_face_the_folders_and_at_most_six_modules() -> None:
    loose = sorted(p.name for p in (ROOT / "shared").glob("*.py"))
    assert len(loose) <= 6, loose
    assert {f"shared.{n[:-3]}" for n in loose} - {"shared.__init__"} <= LOOSE_TOP


def test_the_layering_test_sees_an_arrow_against_the_table() -> None:
    """The checks above can fail: the real graph plus one forbidden arrow is caught."""
    table = layer_table()
    assert "pipeline" not in table["judge"] and "judge" not in table["prompts"]
    assert _cycles({"judge": {"pipeline"}, "pipeline": {"judge"}}) == [["judge", "pipeline"]]


def test_importing_the_judge_loads_no_nlp_no_analysis_and_no_cli() -> None:
    """``import shared.judge`` in a fresh interpreter: no spaCy, torch or sentence-transformers,
    and none of the package's analysis, cli, dimensions or evaluation folders."""
    import subprocess
    import sys

    probe = (
        "import sys, shared.judge, shared.judge.openai, shared.judge.config; "
        "heavy = ('spacy', 'torch', 'sentence_transformers', 'shared.analysis', 'shared.cli', "
        "'shared.dimensions', 'shared.evaluation'); "
        "print(sorted({m for m in sys.modules if m.startswith(heavy)}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
