"""The one redaction rule: no secret reaches a file, a report, a signature, a cache key or an
error text.

A secret is an API key (``--api-key``, ``api_key=``, ``OPENAI_API_KEY``), a bearer token, or the
credentials of a URL (``http://user:PASS@host/v1``). Wherever a command line, a URL or an error
is recorded, its secrets are replaced by :data:`MASK`:

- :func:`redact` masks the secrets known to this process (:func:`register_secret`, and
  ``OPENAI_API_KEY`` of the environment) and anything shaped like one: ``Bearer <token>``,
  ``Authorization: <value>``, ``api_key=<value>``, ``sk-…`` keys, URL credentials. For texts
  the program writes itself (errors, commands, judge descriptions).
- :func:`scrub` masks only the known secrets, in strings nested anywhere in a value: for rows a
  user gave (a summary that happens to say "password: x" is the user's data, left as it is).
- :func:`redact_url` masks a URL's credentials and its secret-named query values.
- :func:`command_line` is the recorded form of ``sys.argv``: the value after ``--api-key`` (or
  in ``--api-key=…``) masked, URLs redacted.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

SECRET_FLAGS = ("--api-key",)
"""Command-line flags whose value is a secret."""

_MIN_KNOWN = 6
"""A known secret shorter than this is not searched for (it would mask ordinary words); the
shaped patterns still catch it after ``Bearer`` or ``api_key=``."""

_PLACEHOLDERS = frozenset({"not-needed", "EMPTY", "none", "None", "sk-no-key-required"})

_known: set[str] = set()

_SECRET_NAME = (
    r"(?:api[-_]?key|x-api-key|access[-_]?token|api[-_]?token|auth[-_]?token"
    r"|password|passwd|secret|client[-_]?secret)"
)
_TOKEN = r"[A-Za-z0-9._~+/=-]"
_PATTERNS = (
    # Authorization: Bearer abc / Authorization: Basic abc / "authorization": "abc"
    (
        re.compile(
            r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token)\s+)?([^\s\"',;}]+)"
        ),
        lambda m: m.group(1) + (m.group(2) + " " if m.group(2) else "") + MASK,
    ),
    (
        re.compile(r"(?i)\b(bearer)\s+(?:(?=\S*\d)" + _TOKEN + "{6,}|" + _TOKEN + "{12,})"),
        lambda m: m.group(1) + " " + MASK,
    ),
    (
        re.compile(
            r"(?i)(\b" + _SECRET_NAME + r"[\"']?\s*[:=]\s*[\"']?)(?![(\[<*])([^\s\"',;&}]+)"
        ),
        lambda m: m.group(1) + MASK,
    ),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{12,}"), lambda m: MASK),
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@\"'<>]+)@"),
        lambda m: m.group(1) + MASK + "@",
    ),
)


def register_secret(value: object) -> None:
    """Remember ``value`` as a secret of this process: every later :func:`redact` and
    :func:`scrub` masks it. Placeholders (``not-needed``) and short values are ignored."""
    if isinstance(value, str):
        value = value.strip()
        if len(value) >= _MIN_KNOWN and value not in _PLACEHOLDERS:
            _known.add(value)


def known_secrets() -> list[str]:
    """The secrets to mask, longest first (so a key that contains another is masked whole)."""
    found = set(_known)
    env = os.environ.get("OPENAI_API_KEY", "").strip()
    if len(env) >= _MIN_KNOWN and env not in _PLACEHOLDERS:
        found.add(env)
    return sorted(found, key=len, reverse=True)


def _mask_known(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact(text: str) -> str:
    """``text`` with every known and every secret-shaped value replaced by :data:`MASK`."""
    if not isinstance(text, str) or not text:
        return text
    text = _mask_known(text, known_secrets())
    for pattern, replace in _PATTERNS:
        text = pattern.sub(replace, text)
    return text


_FLAG_VALUE = re.compile(
    r"(" + "|".join(re.escape(f) for f in SECRET_FLAGS) + r")(=|\s+)(?!'?\*\*\*)('[^']*'|\S+)"
)


def redact_command(text: str) -> str:
    """A recorded command line (one of an older version, too) with the values of
    :data:`SECRET_FLAGS` masked, and :func:`redact` applied."""
    if not isinstance(text, str) or not text:
        return text
    return _FLAG_VALUE.sub(lambda m: m.group(1) + m.group(2) + MASK, redact(text))


def scrub(value: Any) -> Any:
    """``value`` (a string, or dicts and lists of them) with the known secrets masked; other
    text is left exactly as it was."""
    secrets = known_secrets()
    if not secrets:
        return value
    return _scrub(value, secrets)


def _scrub(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return _mask_known(value, secrets)
    if isinstance(value, dict):
        return {_scrub(k, secrets): _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrub(v, secrets) for v in value)
    return value


def redact_url(url: str | None) -> str | None:
    """``url`` without its credentials (``http://***@host/v1``) and with secret-named query
    values (``?api_key=``, ``?token=``) masked; a URL without either comes back unchanged."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    changed = False
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
        changed = True
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_secret_param(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _secret_param(k) else v) for k, v in pairs], safe="*")
            changed = True
    if not changed:
        return _mask_known(url, known_secrets())
    return _mask_known(urlunsplit(parts._replace(netloc=netloc, query=query)), known_secrets())


def url_secrets(url: str | None) -> list[str]:
    """The credentials a URL carries (its user-info password or token, secret query values),
    to :func:`register_secret` them."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = []
    if parts.password:
        found.append(parts.password)
    elif parts.username and "@" in parts.netloc:
        found.append(parts.username)  # https://TOKEN@host: a bare token is the secret
    found += [v for k, v in parse_qsl(parts.query) if _secret_param(k) and v]
    return found


def _secret_param(name: str) -> bool:
    return re.fullmatch(_SECRET_NAME + r"|token|key|sig|signature", name, re.IGNORECASE) is not None


def command_line(argv: Iterable[str], program: str = "summary-eval") -> str:
    """The command as it is recorded (results, report): ``program`` and ``argv`` with the
    values of :data:`SECRET_FLAGS` masked and every argument redacted."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        flag, eq, _ = arg.partition("=")
        if flag in SECRET_FLAGS:
            if eq:
                out.append(flag + "=" + MASK)
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(redact(arg))
    return shlex.join([program, *out])


_PROGRAM_TEXT = ("error", "reason", "reason_detail", "judge")
"""Row and run fields the program writes itself: :func:`redact` applies to them in full."""


def safe_record(record: Any) -> Any:
    """A row (or run record) as it may be written: the known secrets masked everywhere, and the
    fields the program writes itself (an error, a reason, a command, a judge line, nested too)
    redacted in full. A user's own text (source, summary) keeps everything but known secrets."""
    return _safe(record, known_secrets())


def _safe(record: Any, secrets: Sequence[str]) -> Any:
    if isinstance(record, dict):
        return {
            key: (
                redact_command(value)
                if key == "command" and isinstance(value, str)
                else redact(value)
                if key in _PROGRAM_TEXT and isinstance(value, str)
                else _safe(value, secrets)
            )
            for key, value in record.items()
        }
    if isinstance(record, list | tuple):
        return type(record)(_safe(v, secrets) for v in record)
    return _mask_known(record, secrets) if isinstance(record, str) and secrets else record
