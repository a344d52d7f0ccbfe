"""Test-wide setup: offline, no telemetry, no network beyond 127.0.0.1.

pytest-socket (``--allow-hosts`` in pyproject's addopts) makes any connection to another host
raise ``SocketBlockedError`` inside a test; ``test_network_is_blocked`` proves it does.
"""

from __future__ import annotations

import os
import signal

# Set before any framework is imported by a test module.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"
os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"
os.environ["DEEPEVAL_DISABLE_DOTENV"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for _var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
    os.environ.pop(_var, None)

import pytest  # noqa: E402

SEED_SOURCE = (
    "A company is launching a new product, a smartphone app designed to help users track their "
    "fitness goals. The app allows users to set daily exercise targets, log their meals, and track "
    "their water intake. It also provides personalized workout recommendations and sends "
    "motivational reminders throughout the day."
)
SEED_SUMMARY = (
    "A company is launching a fitness tracking app that helps users set exercise goals, log meals, "
    "and track water intake, with personalized workout suggestions and motivational reminders."
)


@pytest.fixture
def seed() -> tuple[str, str]:
    return SEED_SOURCE, SEED_SUMMARY


@pytest.fixture(autouse=True)
def _forget_learned_structured_modes() -> None:
    """OpenAIJudge remembers, per process, the structured-output mode each (server URL, model)
    accepted. Stub servers of different tests can reuse a port, so one test's stub must not
    inherit the mode another test's stub taught."""
    from shared.judge import openai as openai_judge

    openai_judge._learned.clear()
    openai_judge._confirmed.clear()
    openai_judge._probes.clear()


def sigint_default() -> None:
    """``preexec_fn`` of a child process a test stops with SIGINT, as Ctrl-C would: a job a shell
    starts in the background (``.ci/run &``) has SIGINT ignored, every child inherits that, and
    Python leaves an ignored SIGINT ignored; the child gets the default back."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def seen(prompt: str) -> str:
    """``prompt`` as a reader may take it: NFKC-normalised, invisible characters (format
    characters, variation selectors) dropped; a block marker in it is one a model may see."""
    import unicodedata

    text = unicodedata.normalize("NFKC", prompt)
    return "".join(
        c for c in text if unicodedata.category(c) != "Cf" and not 0xFE00 <= ord(c) <= 0xFE0F
    )
