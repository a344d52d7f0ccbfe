"""The hashes of the prompts and schemas that go into a score's signature (``tests/test_prompts.py``
pins them: editing a prompt is a visible, deliberate change).
"""

from __future__ import annotations

import functools
import hashlib
import json
import weakref

from pydantic import BaseModel

from .language import (
    _COMPACT_LANGUAGE_TASKS,
    _LANGUAGE_COMPARE,
    _LANGUAGE_KEEP,
    _LANGUAGE_PAIR,
    _LANGUAGE_QUOTE,
    _LANGUAGE_SAME,
    _LANGUAGE_TASKS,
    _LANGUAGE_WRITE,
    _LANGUAGE_WRITE_ACROSS,
    _SENTENCE_LANGUAGE_TASKS,
    languages,
)
from .pointing import per_call_rules as pointing_rules
from .pointing import split_rules
from .schemas import per_call_rules
from .templates import (
    _DATA_RULE,
    COMPACT_PROMPTS,
    LONG_PROMPTS,
    PROMPTS,
    SENTENCE_PROMPTS,
    SOURCE_PREAMBLE,
)

# ---------------------------------------------------------------------------------------------
# Hashes
# ---------------------------------------------------------------------------------------------


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


_FINGERPRINTS: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()


def schema_fingerprint(schema: type[BaseModel]) -> str:
    """A stable text form of a schema (name + JSON schema), used in hashes and cache keys.

    Remembered per class: building a JSON schema costs about a millisecond, and every judge call
    needs the fingerprint for its cache key (measured: a fifth of the event loop's work for 20
    summaries before this). Weakly, so schema classes made at run time can still be freed."""
    found = _FINGERPRINTS.get(schema)
    if found is None:
        found = f"{schema.__name__}:{json.dumps(schema.model_json_schema(), sort_keys=True)}"
        _FINGERPRINTS[schema] = found
    return found


def prompt_hashes() -> dict[str, str]:
    """Per-task hash of template + output schema (12 hex digits)."""
    return dict(_prompt_hashes())


@functools.cache
def _prompt_hashes() -> tuple[tuple[str, str], ...]:
    # the templates and schemas are module constants: hashed once per process
    return tuple(
        (task, _task_hash(template, schema)) for task, (template, schema) in PROMPTS.items()
    )


def _task_hash(template: str, schema: type[BaseModel]) -> str:
    """12 hex digits over the data rule, one template, its output schema and the rules of the
    per-call schemas actually sent (:func:`shared.prompts.schemas.per_call_rules`)."""
    return _digest(_DATA_RULE, template, schema_fingerprint(schema), per_call_rules(schema))[:12]


@functools.cache
def prompts_hash() -> str:
    """One hash over every prompt and schema (8 hex digits), for the signature."""
    return _digest(*(f"{t}={h}" for t, h in sorted(prompt_hashes().items())))[:8]


@functools.cache
def compact_prompts_hash() -> str:
    """Hash of the two-call path (8 hex digits): the source preamble, its templates and schemas,
    their language instructions, and the step prompts it falls back on (the style review alone;
    claim extraction when a source is too long for one check). In a two-call signature in place
    of :func:`prompts_hash`."""
    parts = [
        f"{task}={_task_hash(template, schema)}"
        for task, (template, schema) in sorted(COMPACT_PROMPTS.items())
    ]
    tasks = [f"{task}={tuple(spec)!r}" for task, spec in sorted(_COMPACT_LANGUAGE_TASKS.items())]
    return _digest(SOURCE_PREAMBLE, prompts_hash(), *parts, *tasks)[:8]


@functools.cache
def sentence_prompts_hash() -> str:
    """Hash of the sentences path (8 hex digits): its templates and schemas (with the rules of
    their per-call classes), their language instructions, the offline sentence split, and the
    two-call path's per-source call and step prompts it shares (:func:`compact_prompts_hash`).
    In a sentences-path signature in place of :func:`prompts_hash`."""
    parts = [
        f"{task}={_digest(_DATA_RULE, template, schema_fingerprint(schema), pointing_rules(schema))[:12]}"
        for task, (template, schema) in sorted(SENTENCE_PROMPTS.items())
    ]
    tasks = [f"{task}={tuple(spec)!r}" for task, spec in sorted(_SENTENCE_LANGUAGE_TASKS.items())]
    return _digest(compact_prompts_hash(), split_rules(), *parts, *tasks)[:8]


@functools.cache
def long_prompts_hash() -> str:
    """Hash of the long-source templates and schemas (8 hex digits); in a signature only when a
    long-source template was used (``|long:<hash>``)."""
    parts = [
        f"{task}={_task_hash(template, schema)}"
        for task, (template, schema) in sorted(LONG_PROMPTS.items())
    ]
    return _digest(*parts)[:8]


@functools.cache
def language_prompts_hash() -> str:
    """Hash of the language instructions (8 hex digits): their pieces and what each task is told
    (:func:`language_block`). In a signature only when a prompt carried a language block
    (``|lang-prompts:<hash>``), so English results keep their signatures and cache entries."""
    pieces = [
        _LANGUAGE_SAME,
        _LANGUAGE_PAIR,
        _LANGUAGE_WRITE,
        _LANGUAGE_WRITE_ACROSS,
        _LANGUAGE_COMPARE,
        _LANGUAGE_QUOTE,
        _LANGUAGE_KEEP,
    ]
    tasks = [f"{task}={tuple(spec)!r}" for task, spec in sorted(_LANGUAGE_TASKS.items())]
    return _digest(*pieces, *tasks)[:8]


def language_signature_part(language: str | None, source_language: str | None = None) -> str:
    """``|lang-prompts:<hash>`` when prompts for these languages carry a language block, else
    "" (English, or an unknown language: today's prompts)."""
    if languages(language, source_language) is None:
        return ""
    return f"|lang-prompts:{language_prompts_hash()}"
