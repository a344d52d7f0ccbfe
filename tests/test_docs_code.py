"""The docs stay true: every Python code block in README.md and docs/*.md runs as written, and
every output they show is produced by the command it shows, or labelled as recorded.

Code blocks. Each Python block runs in a fresh interpreter, in a temporary folder (with
``examples`` linked to the repository's), with ``OPENAI_BASE_URL`` pointing at the stub server
(``shared.testing.stub_server``) and a dummy ``OPENAI_API_KEY``: a block that builds
``OpenAIJudge("gpt-4o-mini")`` or an OpenAI client talks to the fake judge, offline, exactly as a
reader's copy would talk to the real service. DeepEval's switches are *not* set for it (a block
must keep DeepEval's ``.deepeval/`` out of the working folder itself, as a reader's copy would):
no ``.deepeval`` may appear in the temporary folder or in the repository.

Shown outputs. Every fenced block that is not ``python`` or ``bash`` carries a marker on the line
above it (an HTML comment, invisible on GitHub):

- ``<!-- output: python-above -->``: the stdout of the nearest Python block above it;
- ``<!-- output: last-command-above -->``: what the last command of the nearest bash block
  above it prints (stdout and stderr, as a terminal shows them), the whole block run in a
  temporary folder (``examples`` linked), offline, with ``COLUMNS=200`` (no wrapping) and
  exit status 0;
- ``<!-- recorded: NAME -->``: a measurement that cannot be rerun in a test (a real model, a
  run of minutes, packages that are not dependencies). The visible text just above it must say
  "recorded" or "illustrative", and ``RECORDED[NAME]`` checks its structure (columns, rows,
  installed versions, numbers that other docs quote);
- ``<!-- not-output: why -->``: a diagram or a prompt text, not something a command prints
  (a prompt text is checked against the code below).

Produced outputs are compared exactly after one normalisation: trailing spaces and leading or
trailing blank lines are dropped (rich pads table lines to the terminal width). Nothing else is
normalised: the producers print no timing, path or version.

To regenerate the produced outputs after a change, run this file with
``SUMMARY_EVAL_WRITE_DOC_OUTPUTS=1``: each produced block is rewritten in place with what the
command printed (review the diff).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared.testing import stub_server

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
MARKER = re.compile(r"<!-- (output|recorded|not-output): ?(.*?) -->\n\Z")
GUARD = (
    'import pytest_socket\npytest_socket.socket_allow_hosts(["127.0.0.1", "localhost", "::1"])\n'
)
CODE = ("python", "bash")
WRITE = os.environ.get("SUMMARY_EVAL_WRITE_DOC_OUTPUTS") == "1"


@dataclass(frozen=True)
class Fence:
    doc: Path
    line: int
    info: str
    body: str
    start: int  # offset of the body in the file
    kind: str = ""  # the marker's kind: output, recorded, not-output ("" for none)
    name: str = ""

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def fences(doc: Path) -> list[Fence]:
    text = doc.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        marker = MARKER.search(text, max(0, match.start() - 200), match.start())
        kind, name = marker.groups() if marker else ("", "")
        line = text[: match.start()].count("\n") + 1
        info, body = match.group(1), match.group(2)
        found.append(Fence(doc, line, info, body, match.start(2), kind, name.strip()))
    return found


ALL = [f for doc in DOCS for f in fences(doc)]
PYTHON = [f for f in ALL if f.info == "python"]
OUTPUTS = [f for f in ALL if f.kind == "output"]
RECORDED = [f for f in ALL if f.kind == "recorded"]


def above(fence: Fence, info: str) -> Fence:
    """The nearest ``info`` block above ``fence`` in its document."""
    before = [f for f in ALL if f.doc == fence.doc and f.line < fence.line and f.info == info]
    assert before, f"{fence.where}: no {info} block above it"
    return before[-1]


def shown_output_of(code: Fence) -> Fence | None:
    """The ``python-above`` output block that shows what ``code`` prints, if any."""
    for f in OUTPUTS:
        if f.name == "python-above" and above(f, "python") == code:
            return f
    return None


def normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n") + "\n"


def compare_or_write(shown: Fence, printed: str) -> None:
    printed = normalised(printed)
    if WRITE and normalised(shown.body) != printed:
        text = shown.doc.read_text(encoding="utf-8")
        end = shown.start + len(shown.body)
        shown.doc.write_text(text[: shown.start] + printed + text[end:], encoding="utf-8")
        return
    assert normalised(shown.body) == printed, (
        f"{shown.where}: the shown output is not what the command prints "
        "(SUMMARY_EVAL_WRITE_DOC_OUTPUTS=1 rewrites it; review the diff):\n" + printed
    )


def installed_version(name: str) -> tuple[int, ...]:
    """The installed distribution's version, as numbers (its leading numeric parts)."""
    parts = re.findall(r"\d+", importlib.metadata.version(name).split("+")[0])[:3]
    return tuple(int(p) for p in parts)


def workdir(tmp_path: Path) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    return tmp_path


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a doc's code: this suite's, minus OpenAI's and DeepEval's file switch."""
    drop = ("OPENAI_", "DEEPEVAL_FILE_SYSTEM", "DEEPEVAL_CACHE_FOLDER")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    bin_dir = str(Path(sys.executable).parent)
    env |= {"PYTHONPATH": str(ROOT), "PATH": bin_dir + os.pathsep + env.get("PATH", "")}
    return env | extra


def deepeval_folders() -> set[Path]:
    return set(ROOT.rglob(".deepeval"))


# --- every shown output is accounted for ---------------------------------------------------------


def test_every_shown_output_is_produced_or_labelled() -> None:
    unmarked = [f.where for f in ALL if f.info not in CODE and not f.kind]
    assert not unmarked, f"output blocks without an output/recorded/not-output marker: {unmarked}"
    for f in OUTPUTS:
        assert f.name in ("python-above", "last-command-above"), f"{f.where}: {f.name}"
    for f in RECORDED:
        assert f.name in RECORDED_CHECKS, f"{f.where}: no structural check named {f.name!r}"
        text = f.doc.read_text(encoding="utf-8")
        label = text[max(0, f.start - 900) : f.start].lower()
        assert "recorded" in label or "illustrative" in label, f"{f.where} is not labelled"


# --- code blocks run, and their shown stdout is what they print ----------------------------------


@pytest.mark.parametrize("code", PYTHON, ids=[f.where for f in PYTHON])
def test_doc_code_block_runs_as_written(code: Fence, tmp_path: Path) -> None:
    if (
        re.search(r"^import ray$", code.body, re.MULTILINE)
        and importlib.util.find_spec("ray") is None
    ):
        pytest.skip("needs the ray extra; CI's Ray stage runs this block with Ray installed")
    needs = re.match(r"# needs DeepEval (\d+)\.(\d+) or newer", code.body)
    if needs and installed_version("deepeval") < tuple(map(int, needs.groups())):
        pytest.skip(f"{needs.group(0)[2:]}; CI's main run has it (the oldest stage does not)")
    here = workdir(tmp_path)
    script = here / "block.py"
    script.write_text(GUARD + code.body, encoding="utf-8")
    before = deepeval_folders()
    with stub_server() as url:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=here,
            env=child_env(OPENAI_BASE_URL=url, OPENAI_API_KEY="stub-key"),
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, f"{code.where}:\n{done.stderr[-3000:]}"
    assert not (here / ".deepeval").exists(), f"{code.where} left .deepeval/ in the working folder"
    assert deepeval_folders() == before, f"{code.where} wrote .deepeval/ into the repository"
    shown = shown_output_of(code)
    if shown is not None:
        compare_or_write(shown, done.stdout)


# --- command outputs: the bash block above, run ------------------------------------------------


def last_command_split(block: str) -> tuple[str, str]:
    """(everything before the last command, the last command): the last logical line, with its
    backslash continuations."""
    lines = block.rstrip("\n").split("\n")
    start = len(lines) - 1
    while start > 0 and lines[start - 1].endswith("\\"):
        start -= 1
    return "\n".join(lines[:start]), "\n".join(lines[start:])


def run_bash(script: str, here: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``script`` run by bash in ``here``: stdout and stderr together, as a terminal shows them."""
    return subprocess.run(
        ["bash", "-c", script],
        cwd=here,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )


COMMAND_OUTPUTS = [f for f in OUTPUTS if f.name == "last-command-above"]


@pytest.mark.parametrize("shown", COMMAND_OUTPUTS, ids=[f.where for f in COMMAND_OUTPUTS])
def test_shown_command_output_is_what_the_command_prints(shown: Fence, tmp_path: Path) -> None:
    setup, command = last_command_split(above(shown, "bash").body)
    here = workdir(tmp_path)
    env = child_env(COLUMNS="200", NO_COLOR="1", TERM="dumb")
    prepared = subprocess.run(
        ["bash", "-c", setup], cwd=here, env=env, capture_output=True, text=True, timeout=900
    )
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    done = run_bash(command, here, env)
    assert done.returncode == 0, f"{shown.where}: exit {done.returncode}\n{done.stdout[-3000:]}"
    compare_or_write(shown, done.stdout)
    text = shown.doc.read_text(encoding="utf-8")
    if "--fail-if-worse" in command:  # the docs quote the gate of the swapped comparison too
        a, b = re.search(r"compare (\S+) (\S+)", command).groups()
        swapped = run_bash(command.replace(f"compare {a} {b}", f"compare {b} {a}"), here, env)
        assert swapped.returncode == 1
        gate = next(line for line in swapped.stdout.splitlines() if line.startswith("gate failed"))
        assert f"`{gate}`" in " ".join(text.split()), (
            f"{shown.where}: the swapped gate reads {gate}"
        )


# --- lines quoted in prose ---------------------------------------------------------------------


def prose(doc: str) -> str:
    return " ".join((ROOT / doc).read_text(encoding="utf-8").split())


def test_the_bill_lines_docs_quote_are_what_a_stub_run_prints(tmp_path: Path) -> None:
    """docs/CLI.md quotes the estimate and the bill of `score examples/summaries.jsonl` against
    a local server; the stub judge (a server on 127.0.0.1) prints them the same way."""
    here = workdir(tmp_path)
    with stub_server() as url:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "shared.cli",
                "score",
                "examples/summaries.jsonl",
                "--base-url",
                url,
                "--model",
                "stub",
                "--no-report",
                "-o",
                "out.results.jsonl",
                "--cache",
                "cache.sqlite",
            ],
            cwd=here,
            env=child_env(COLUMNS="400", NO_COLOR="1"),
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    output = " ".join((done.stdout + "\n" + done.stderr).split())
    estimate = re.search(r"Estimate for .*?before cache hits", output).group(0)
    bill = re.search(r"Judge bill: .*?\(local server\)", output).group(0)
    cli = prose("docs/CLI.md")
    assert f'"{estimate}"' in cli and f'"{bill}"' in cli, f"{estimate}\n{bill}"


def test_the_language_block_docs_show_is_the_prompts() -> None:
    from shared.prompts import language_block

    (shown,) = [f for f in ALL if f.doc.name == "LANGUAGES.md" and f.info == "text"]
    assert shown.body.rstrip("\n") == language_block("verify_claims", "en", "de")


def test_the_readme_signature_comment_is_the_fake_judges(tmp_path: Path) -> None:
    from shared import score_summary
    from shared.testing import FakeJudge

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"print\(result\.signature\)  # (\S+)", readme).group(1)
    signature = score_summary(
        "A council met on Monday.", "A council met.", judge=FakeJudge(), dimensions=[]
    ).signature
    head, _, tail = shown.partition("prompts:…")
    assert signature.startswith(head) and signature.endswith(tail), signature


# --- recorded outputs: structure, versions, and numbers quoted elsewhere ------------------------


def table_row(text: str, label: str) -> list[str]:
    """The cells of the markdown table row that starts with ``| label |``."""
    match = re.search(rf"^\| {re.escape(label)} \|(.*)\|$", text, re.MULTILINE)
    assert match, f"no row {label!r}"
    return [cell.strip() for cell in match.group(1).split("|")]


def validity_table() -> str:
    text = (ROOT / "docs" / "VALIDITY.md").read_text(encoding="utf-8")
    start = text.index("## Deterministic dimensions (printed by the command above)")
    return text[start : text.index("\n\n(", start)]


def check_validity(f: Fence) -> None:
    table = validity_table()
    header = table_row(table, "metric")
    assert header == ["coherence", "consistency", "fluency", "relevance", "None"]
    for name in (
        "density (score)",
        "non_redundancy (det.)",
        "coherence (entity_grid, default)",
        "conciseness",
        "grounding",
    ):
        assert re.fullmatch(r"[+-]\d\.\d{3} / [+-]\d\.\d{3} \(\d+\)", table_row(table, name)[0])
    # the README's table quotes it
    readme = prose("README.md")
    coherence = table_row(table, "coherence (entity_grid, default)")[0].split(" / ")[0]
    grounding = table_row(table, "grounding")[1].split(" / ")[0]
    assert f"**{coherence}**" in readme and f"**{grounding} with human consistency**" in readme
    cv = re.search(
        r"\*\*[+-]\d\.\d{3}\*\* \(grouped 5-fold CV ([+-]\d\.\d{3} ± \d\.\d{3})\)", readme
    )
    assert cv and f"test rho {cv.group(1)} over 25 folds" in prose("docs/VALIDITY.md")
    assert f"ρ = {coherence}" in prose("docs/DIMENSIONS.md")


def check_validity_exploration(f: Fence) -> None:
    shown = f.body
    if shown.startswith("| coherence (entity_grid, default) |"):  # an excerpt of the table
        for name in ("coherence (entity_grid, default)", "grounding"):
            assert table_row(shown, name) == table_row(validity_table(), name), name
    assert re.search(r"[+-]\d\.\d{2,3}", shown)


def check_agree(f: Fence) -> None:
    lines = f.body.splitlines()
    assert lines[0].split() == [
        "metric=label",
        "level",
        "units",
        "statistic",
        "value",
        "95%",
        "interval",
    ]
    pairs = re.findall(r"^ (\w+=\w+) +summary ", f.body, re.MULTILINE)
    assert pairs == [
        "coherence=coherence",
        "conciseness=relevance",
        "density=consistency",
        "non_redundancy=fluency",
    ]
    assert f.body.count("spearman") == f.body.count("kendall") == f.body.count("pearson") == 4
    # the same computation as docs/VALIDITY.md's table (summary level, 50 articles)
    spearman = re.search(r"coherence=coherence +summary +50 +spearman +(\S+)", f.body).group(1)
    kendall = re.search(r"^ +kendall +(\S+)", f.body, re.MULTILINE).group(1)
    row = table_row(validity_table(), "coherence (entity_grid, default)")[0]
    assert row.startswith(f"{spearman} / {kendall} (50)"), row


BENCH_COLUMNS = [
    "metric",
    "version",
    "scored",
    "failed",
    "calls",
    "prompt",
    "tok",
    "cached",
    "tok",
    "compl",
    "tok",
    "dollars",
    "wall",
    "s",
]


def check_bench(f: Fence) -> None:
    header = next(line for line in f.body.splitlines() if line.split()[:1] == ["metric"])
    assert header.split() == BENCH_COLUMNS
    versions = {
        "ours": importlib.metadata.version("summary-eval"),
        "deepeval": importlib.metadata.version("deepeval"),
        "ragas": importlib.metadata.version("ragas"),
    }
    if re.search(r"^ ours-two-call ", f.body, re.MULTILINE):  # ours in both reply shapes
        versions = {"ours": versions["ours"], "ours-two-call": versions["ours"], **versions}
    for metric, version in versions.items():
        assert re.search(rf"^ {metric} +{re.escape(version)} +\d+/\d+ ", f.body, re.MULTILINE), (
            f"{f.where}: no {metric} {version} row"
        )
    installed = re.search(r"^Installed: (.*)$", f.body, re.MULTILINE)
    if installed:
        assert installed.group(1) == ", ".join(f"{m} {v}" for m, v in versions.items())


def check_peers(f: Fence) -> None:
    assert f.body.startswith("tokenizer: o200k_base")
    header = next(line for line in f.body.splitlines() if line.startswith("| runner |"))
    assert "| calls | prompt tok |" in header
    runners = re.findall(r"^\| (deepeval\.evaluate|ragas\.evaluate) (\S+)", f.body, re.MULTILINE)
    assert ("deepeval.evaluate", "SummarizationMetric") in runners
    assert ("deepeval.evaluate", "ours") in runners


def check_peers_readme(f: Fence) -> None:
    check_peers(f)
    # the README's cost table quotes this run (20 summaries of one article)
    readme = prose("README.md")
    for quoted in re.findall(r"\| judge calls \| (\d+) \(\d+ repeated\) \| (\d+) ", readme)[0]:
        assert f"| {quoted} |" in f.body


def check_language_detectors(f: Fence) -> None:
    results = re.findall(r"^([\w-]+): (\d+)/(\d+) right \(", f.body, re.MULTILINE)
    assert results and results[0][0] == "shared"
    assert all(
        line.startswith("    wrong: ")
        for line in f.body.splitlines()
        if not re.match(r"[\w-]+: \d+/\d+ right", line)
    )


STUB_URL = "http://127.0.0.1:8765/v1"
"""The stub judge's address in docs/QUESTIONS.md (``summary-eval stub-judge --port 8765``)."""
DATE = re.compile(r'"date": "\d{4}-\d\d-\d\d"')


def check_questions_stub(f: Fence) -> None:
    """docs/QUESTIONS.md's outputs, recorded against the stub judge: the bash block above run
    again against a stub server (its address, and the date the questions file records, are all
    that may differ) prints them."""
    setup, command = last_command_split(above(f, "bash").body)
    with tempfile.TemporaryDirectory() as folder, stub_server() as url:
        here = workdir(Path(folder))
        env = child_env(COLUMNS="200", NO_COLOR="1", TERM="dumb")
        for script in (setup, command):
            done = run_bash(script.replace(STUB_URL, url), here, env)
            assert done.returncode == 0, f"{f.where}: exit {done.returncode}\n{done.stdout}"
    shown = DATE.findall(f.body)
    printed = done.stdout.replace(url, STUB_URL)
    if shown:  # the day the questions were frozen: the day the doc was recorded
        printed = DATE.sub(shown[0].replace("\\", "\\\\"), printed)
    compare_or_write(f, printed)


RECORDED_CHECKS: dict[str, Callable[[Fence], None]] = {
    "questions-stub": check_questions_stub,
    "validity": check_validity,
    "validity-exploration": check_validity_exploration,
    "agree-summeval": check_agree,
    "bench": check_bench,
    "peers": check_peers,
    "peers-readme": check_peers_readme,
    "language-detectors": check_language_detectors,
}


@pytest.mark.parametrize("shown", RECORDED, ids=[f.where for f in RECORDED])
def test_recorded_output_has_its_structure(shown: Fence) -> None:
    RECORDED_CHECKS[shown.name](shown)
