"""Test doubles: the fake judge and the stub OpenAI-compatible server.

``shared.testing`` keeps the names it had as a module.
"""

from .fake import (
    FakeJudge,
    JudgeOutputError,
    Scripted,
    content_words,
    default_answer,
    language_marker,
    minimal_instance,
    sentences,
)
from .stub import StubURL, stub_server

__all__ = [
    "FakeJudge",
    "JudgeOutputError",
    "Scripted",
    "StubURL",
    "content_words",
    "default_answer",
    "language_marker",
    "minimal_instance",
    "sentences",
    "stub_server",
]
