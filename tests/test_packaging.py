"""The package as users get it: the extras declare version ranges (the CI stage on the oldest
versions installs their lower bounds), and what the package reads at run time is package data."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import shared
from shared.analysis import bench_data

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE = Path(shared.__file__).resolve().parent


def extra(name: str) -> dict[str, Requirement]:
    reqs = (Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"][name])
    return {r.name: r for r in reqs}


def oldest() -> dict[str, str]:
    lines = (ROOT / ".ci" / "oldest.txt").read_text(encoding="utf-8").splitlines()
    pins = (line.split("==") for line in lines if line and not line.startswith("#"))
    return {name: version for name, version in pins}


@pytest.mark.parametrize("framework", ["deepeval", "ragas"])
def test_the_extras_declare_a_range_whose_lower_bound_the_oldest_stage_installs(
    framework: str,
) -> None:
    spec = extra(framework)[framework].specifier
    assert not any(s.operator in ("==", "===") for s in spec), f"{framework} is pinned: {spec}"
    lower = [s.version for s in spec if s.operator == ">="]
    assert lower == [oldest()[framework]], f"{framework}: {spec} vs .ci/oldest.txt"
    assert any(s.operator == "<" for s in spec), f"{framework}: no upper bound in {spec}"
    # the reproducible default install keeps a version inside the range
    pinned = next(
        line.split("==")[1]
        for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if line.startswith(f"{framework}==")
    )
    assert spec.contains(pinned), f"constraints.txt's {framework} {pinned} is outside {spec}"


def package_data_covers(path: Path) -> bool:
    """Whether pyproject's package-data puts ``path`` (a file inside ``shared``) in the wheel."""
    for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items():
        folder = ROOT.joinpath(*package.split("."))
        if folder in path.parents:
            relative = path.relative_to(folder).as_posix()
            if any(fnmatch.fnmatch(relative, pattern) for pattern in patterns):
                return True
    return False


def test_the_summeval_sample_is_package_data() -> None:
    path = bench_data.summeval_path()
    assert path.is_file() and PACKAGE in path.resolve().parents
    assert path == bench_data.SUMMEVAL_PATH
    assert package_data_covers(ROOT / path.resolve().relative_to(PACKAGE.parent))
    assert package_data_covers(path.resolve().parent / "README.md")  # its source and licence
    # the repository's examples/summeval is the same folder, not a second copy
    assert (ROOT / "examples" / "summeval" / "dev.jsonl").resolve() == path.resolve()


def test_the_report_template_is_package_data() -> None:
    assert package_data_covers(PACKAGE / "cli" / "report.html.j2")


def test_bench_reads_the_packaged_sample_by_default() -> None:
    items = bench_data.summeval_items(articles=1, summaries=3)
    assert len(items) == 3 and {i.group for i in items} == {items[0].group}


@pytest.mark.parametrize(
    ("hide", "module", "message"),
    [
        (  # DeepEval before 3.9.9 has no SingleTurnParams
            "import deepeval.test_case as m; del m.SingleTurnParams",
            "deepeval_ext",
            "deepeval_ext needs DeepEval 3.9.9 or newer",
        ),
        (  # Ragas before 0.3.7 has no collections API
            "sys.modules['ragas.metrics.collections.base'] = None",
            "ragas_ext.collections",
            "ragas_ext.collections needs Ragas 0.4.2 or newer",
        ),
    ],
)
def test_an_older_framework_than_the_range_gets_a_clear_import_error(
    hide: str, module: str, message: str
) -> None:
    """What an older framework lacks, taken away in a fresh interpreter: the adapter's import
    says which version it needs."""
    code = f"import sys; {hide}; import {module}"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0 and message in done.stderr, done.stderr[-2000:]
