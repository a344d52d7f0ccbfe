#!/usr/bin/env bash
# CI stage: the package as users get it. Builds the sdist and the wheel, checks that the sdist
# builds the same wheel, installs the wheel (not editable) into a clean venv, and runs the
# commands from an empty folder outside the repository, against the stub judge where a judge is
# needed: score (no judge, then the stub), bench with no --summeval (the SummEval sample is
# package data), questions, compare, report, check-judge, a DeepEval evaluate() and a Ragas
# scoring through the adapters. Everything they read at run time must come from the wheel:
# the repository is never on sys.path, and the folder holds only a copy of one example file.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
stub_pid=""
cleanup() {  # the stub, the temporary folder, and setuptools' ignored outputs in the tree
    [ -z "$stub_pid" ] || kill "$stub_pid" 2>/dev/null || true
    rm -rf "$work" "$repo/build" "$repo"/*.egg-info
}
trap cleanup EXIT

echo "== wheel: build the sdist, the wheel from it, and the wheel from the tree"
rm -rf "$repo/build"  # setuptools' ignored build folder: a stale copy would reach the wheel
"$python" -m venv "$work/builder"
"$work/builder/bin/pip" install -q build
"$work/builder/bin/python" -m build --outdir "$work/dist" "$repo" >"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log"; exit 1; }
"$work/builder/bin/python" -m build --wheel --outdir "$work/direct" "$repo" >>"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log"; exit 1; }
wheel="$(ls "$work"/dist/*.whl)"
sdist="$(ls "$work"/dist/*.tar.gz)"
"$python" "$repo/.ci/same_wheel.py" "$wheel" "$work"/direct/*.whl

echo "== wheel: install $(basename "$wheel") into a clean venv"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q torch==2.13.0 -c "$repo/constraints.txt" "$wheel[ragas,deepeval]"
bin="$work/venv/bin"

mkdir "$work/run" && cd "$work/run"
cp "$repo/examples/summaries.jsonl" summaries.jsonl
unset PYTHONPATH
"$bin/python" - "$repo" <<'PY'
import sys
from pathlib import Path

import shared

here = Path(shared.__file__).resolve()
assert Path(sys.argv[1]).resolve() not in here.parents, f"shared imported from the repository: {here}"
print("shared imported from", here.parent)
PY

echo "== wheel: score, no judge"
"$bin/summary-eval" score summaries.jsonl -o nojudge.results.jsonl --no-judge
echo "== wheel: the stub judge"
"$bin/summary-eval" stub-judge >stub.url 2>stub.log &
stub_pid=$!
for _ in $(seq 100); do [ -s stub.url ] && break; sleep 0.2; done
url="$(head -1 stub.url)"
[ -n "$url" ] || { cat stub.log; exit 1; }
judge=(--base-url "$url" --model stub)
"$bin/summary-eval" check-judge "${judge[@]}"
"$bin/summary-eval" score summaries.jsonl "${judge[@]}" --no-cache -o stub.results.jsonl
"$bin/summary-eval" questions summaries.jsonl "${judge[@]}" --no-cache -o questions.jsonl
"$bin/summary-eval" compare nojudge.results.jsonl stub.results.jsonl --allow-unpaired
"$bin/summary-eval" report stub.results.jsonl -o again.report.html
echo "== wheel: bench with no --summeval (the packaged sample)"
"$bin/summary-eval" bench --articles 1 --summaries 3 "${judge[@]}" --workdir bench
test -s stub.report.html && test -s again.report.html && test -s bench/bench-report.html

echo "== wheel: the adapters (DeepEval evaluate(), Ragas evaluate() and collections)"
OPENAI_BASE_URL="$url" OPENAI_API_KEY=stub-key "$bin/python" "$repo/.ci/wheel_adapters.py"
ls -A
test ! -e .deepeval || { echo "DeepEval wrote .deepeval/ into the folder" >&2; exit 1; }
echo "== wheel: ok ($(basename "$sdist"), $(basename "$wheel"))"
