#!/usr/bin/env bash
# CI stage: the adapters on the OLDEST DeepEval and Ragas the extras allow (.ci/oldest.txt, the
# lower bounds of pyproject's ranges), beside the main run on the newest (constraints.txt).
#
# A fresh venv (pip's cache reused; the same torch pin as the README), the package with both
# extras resolved under .ci/oldest.txt instead of constraints.txt, then only the adapter tests:
# tests/test_deepeval_ext.py, tests/test_ragas_ext.py, tests/test_deepeval_cli.py,
# tests/test_deepeval_host.py (DeepEval's conventions), tests/test_packaging.py (the ranges) and
# the code examples of docs/deepeval.md and docs/ragas.md, their shown outputs compared too.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${OLDEST_VENV:-.venv-oldest}"
python="${PYTHON:-python3}"
rm -rf "$venv"
"$python" -m venv "$venv"
echo "== oldest: install $(grep -v '^#' .ci/oldest.txt | tr '\n' ' ')"
"$venv/bin/pip" install -q torch==2.13.0 -c .ci/oldest.txt -e ".[ragas,deepeval,bench]" \
    "pytest>=8" "pytest-socket>=0.7"
# Ragas 0.4.2 loads tiktoken's o200k_base when imported (0.4.3: on first use), from the network
# unless cached: the bench extra's bpe-openai carries the same file.
export TIKTOKEN_CACHE_DIR="$PWD/$venv/tiktoken-cache"
"$venv/bin/python" .ci/tiktoken_cache.py "$TIKTOKEN_CACHE_DIR"
"$venv/bin/pip" list 2>/dev/null | grep -iE '^(deepeval|ragas|openai|pydantic|spacy) ' || true
installed="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("deepeval"), m.version("ragas"))')"
[ "$installed" = "$(grep -v '^#' .ci/oldest.txt | cut -d= -f3 | tr '\n' ' ' | sed 's/ $//')" ] \
    || { echo "oldest stage installed $installed, not .ci/oldest.txt's versions" >&2; exit 1; }
echo "== oldest: adapter tests"
"$venv/bin/python" -m pytest -p no:cacheprovider -q \
    tests/test_deepeval_ext.py tests/test_ragas_ext.py tests/test_deepeval_cli.py \
    tests/test_deepeval_host.py tests/test_packaging.py \
    tests/test_docs_code.py -k "not test_docs_code or deepeval.md or ragas.md"
