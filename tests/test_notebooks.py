"""Execute every notebook in notebooks/ so the walkthroughs cannot rot.

The kernel is a separate process, out of pytest-socket's reach, so a hidden first cell installs
the same guard there (connections only to 127.0.0.1) before the notebook's own cells run.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
GUARD = (
    "import os\n"
    "import pytest_socket\n"
    'pytest_socket.socket_allow_hosts(["127.0.0.1", "localhost", "::1"])\n'
    "import socket\n"
    "try:\n"
    '    socket.create_connection(("198.51.100.7", 80), timeout=1)\n'
    "except pytest_socket.SocketConnectBlockedError:\n"
    "    pass\n"
    "else:\n"
    '    raise RuntimeError("network guard is not active in the kernel")\n'
)


def test_there_is_a_notebook() -> None:
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_offline(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(GUARD))
    env_keep = {k: os.environ[k] for k in os.environ if not k.startswith("OPENAI_")}
    os.environ.clear()
    os.environ.update(env_keep)
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    assert not (path.parent / ".deepeval").exists()

    text = "\n".join(
        output.get("text", "") if output.get("output_type") == "stream" else ""
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    if path.name == "walkthrough.ipynb":
        assert "signature: judge:fake-judge|n:10|" in text
        assert "summary_quality" in text and "summary_alignment" in text
        # DeepEval: the good summary passes its thresholds, the hallucinating one does not
        assert "Summary Quality" in text and "success=True" in text and "success=False" in text
        assert "mean per-article Spearman" in text
        plots = [
            output
            for cell in notebook.cells
            if cell.cell_type == "code"
            for output in cell.get("outputs", [])
            if "application/vnd.plotly.v1+json" in output.get("data", {})
            or "text/html" in output.get("data", {})
        ]
        assert plots, "the SummEval plot produced no output"


def declared_distributions() -> set[str]:
    """The distributions pyproject.toml declares for a notebook reader: the core's and the
    ``all`` extra's (Ragas and DeepEval), names normalised."""
    import tomllib

    project = tomllib.loads((NOTEBOOKS[0].parents[1] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["ragas"], *extras["deepeval"]]
    return {
        re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in wanted
    }


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_imports_only_declared_packages(path: Path) -> None:
    """Each module a notebook imports is the standard library's, this project's, or comes from
    a distribution pyproject.toml declares (so a reader's `pip install ".[all]"` has it)."""
    notebook = nbformat.read(path, as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    modules = set()
    for tree_node in ast.walk(ast.parse(code)):
        if isinstance(tree_node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in tree_node.names}
        elif isinstance(tree_node, ast.ImportFrom) and tree_node.module and not tree_node.level:
            modules.add(tree_node.module.split(".")[0])
    ours = {"shared", "ragas_ext", "deepeval_ext"}
    providers = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    undeclared = {
        module: providers.get(module)
        for module in modules - ours - set(sys.stdlib_module_names)
        if not {d.lower().replace("_", "-") for d in providers.get(module, [])} & declared
    }
    assert not undeclared, (
        f"{path.name} imports packages pyproject.toml does not declare: {undeclared}"
    )
