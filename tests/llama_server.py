"""A llama.cpp ``llama-server`` on 127.0.0.1 for the real-model tests: started on a free port,
awaited on its ``/health`` (503 while the model loads, 200 when ready; no sleep decides
anything but the poll interval), stopped afterwards."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

LOAD_LIMIT = 300
"""Seconds a server may take to load its model before the fixture fails (a 1.1 GB model on a
busy 2-core machine takes tens of seconds)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def running(command: Sequence[str], port: int, log_dir: Path) -> Iterator[str]:
    """Run a llama-server ``command`` listening on ``port``; yield its root URL once healthy."""
    log_path = log_dir / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT)
        root = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + LOAD_LIMIT
        try:
            while not healthy(root):
                if process.poll() is not None:
                    pytest.fail(
                        f"llama-server exited ({process.returncode}): {log_path.read_text()}"
                    )
                if time.monotonic() > deadline:
                    pytest.fail(f"llama-server not healthy within {LOAD_LIMIT} s: {log_path}")
                time.sleep(0.5)
            yield root
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@contextlib.contextmanager
def llama_server(
    binary: str, gguf: str, alias: str, args: Sequence[str], log_dir: Path
) -> Iterator[str]:
    """Yield the OpenAI base URL of a llama-server serving ``gguf`` as ``alias`` with ``args``
    (context, slots), with SUMMARY_EVAL_LLAMA_THREADS threads (default 2; on a busy machine 1
    is faster)."""
    port = free_port()
    threads = os.environ.get("SUMMARY_EVAL_LLAMA_THREADS", "2")
    command = [binary, "-m", gguf, "--host", "127.0.0.1", "--port", str(port), "-t", threads]
    with running([*command, "--alias", alias, *args], port, log_dir) as root:
        yield f"{root}/v1"
