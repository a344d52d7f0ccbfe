"""Reading a judge's text reply: the one code-fence stripper and the one strict JSON parser.

Internal: users and adapters reach these through :mod:`shared.adapter_kit`; the OpenAI judge
and the DeepEval adapter both parse through here, so a reply is accepted or refused alike.
"""

from __future__ import annotations

import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from .wrappers import JudgeOutputError, validation_summary

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"^```(?:json|JSON)?\s*(.*?)\s*```$", re.DOTALL)


def strip_code_fence(text: str) -> str:
    """``text`` without surrounding whitespace and one enclosing ```json fence, if any."""
    text = text.strip()
    fenced = _FENCE.match(text)
    return fenced.group(1) if fenced else text


def parse_json_reply(content: str, schema: type[T]) -> T:
    """Parse a model's text reply into ``schema``; code fences are tolerated, nothing else is."""
    text = strip_code_fence(content)
    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        snippet = text if len(text) <= 200 else text[:200] + "…"
        raise JudgeOutputError(
            # every problem with its place (first five): the first alone misleads on a two-shape
            # entry ("Input should be 0 or 5" for a pointer past the last sentence)
            f"reply is not valid {schema.__name__} JSON: {validation_summary(exc)}"
            f" (reply: {snippet!r})",
            content,
        ) from exc
