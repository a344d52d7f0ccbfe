"""A DeepEval model as a :class:`shared.Judge`: the one place that talks to ``DeepEvalBaseLLM``.

DeepEval models answer in three shapes (a pydantic instance, a JSON string, or a
``(result, cost)`` tuple from the native models); :func:`normalise_output` turns all of them into
the requested schema or raises :class:`shared.JudgeOutputError`, so the core's validating wrapper
retries with the error fed back. Costs are added to a per-case accumulator held in a context
variable: every test case runs in its own task, so concurrent cases never share a counter.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from dataclasses import dataclass
from typing import Any, TypeVar

from deepeval.models import DeepEvalBaseLLM
from pydantic import BaseModel, ValidationError

from shared import JudgeOutputError
from shared.adapter_kit import attached, strip_code_fence, validation_summary

T = TypeVar("T", bound=BaseModel)


@dataclass
class CaseUsage:
    """What one test case's judge calls cost; ``cost`` stays None until a call reports one."""

    cost: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    calls: int = 0

    def add(self, cost: object) -> None:
        self.calls += 1
        value = getattr(cost, "value", cost)  # DeepEval may wrap a cost in an object
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.cost = (self.cost or 0.0) + float(value)
        # native models return an EvaluationCost: a float carrying token counts
        for name in ("input_tokens", "output_tokens"):
            tokens = getattr(cost, name, None)
            if isinstance(tokens, int):
                setattr(self, name, (getattr(self, name) or 0) + tokens)


current_usage: contextvars.ContextVar[CaseUsage | None] = contextvars.ContextVar(
    "summary_eval_deepeval_usage", default=None
)
"""The accumulator of the test case being measured (set by the metric around one case)."""


def _accepts_schema(method: Any) -> bool:
    """Whether ``method`` takes a ``schema`` keyword (named, or through ``**kwargs``).

    Checked from the signature rather than by catching TypeError, which would also swallow a
    TypeError raised inside a model that does accept the schema.
    """
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.name == "schema" or p.kind is inspect.Parameter.VAR_KEYWORD
        for p in params
        if p.kind is not inspect.Parameter.VAR_POSITIONAL
    )


def split_cost(output: object) -> tuple[object, object]:
    """``(result, cost)`` tuples (DeepEval's native models) to result and cost; else no cost."""
    if isinstance(output, tuple) and len(output) == 2:
        return output[0], output[1]
    return output, None


def normalise_output(output: object, schema: type[T], model_name: str) -> T:
    """A model's reply as an instance of ``schema`` (strict pydantic validation).

    Accepts an instance of the schema, another pydantic model or a dict with the same fields, or
    JSON text (optionally in a ```json fence). Anything else raises JudgeOutputError with the
    reason, which the validating wrapper feeds back to the model on the retry.
    """
    if isinstance(output, schema):
        return output
    try:
        if isinstance(output, BaseModel):
            return schema.model_validate(output.model_dump())
        if isinstance(output, dict):
            return schema.model_validate(output)
        if isinstance(output, str):
            return schema.model_validate_json(strip_code_fence(output))
    except ValidationError as exc:
        raw = output if isinstance(output, str) else repr(output)
        raise JudgeOutputError(
            f"{model_name} returned output that does not match {schema.__name__}: "
            f"{validation_summary(exc)}",
            raw[:2000],
        ) from exc
    raise JudgeOutputError(
        f"{model_name} returned a {type(output).__name__}; expected a {schema.__name__} "
        "instance, a JSON string, or a (result, cost) tuple",
        repr(output)[:2000],
    )


class DeepEvalJudge:
    """The :class:`shared.Judge` protocol over a ``DeepEvalBaseLLM``.

    ``use_async=True`` awaits ``a_generate``; ``False`` runs the model's sync ``generate`` in a
    worker thread (DeepEval's ``async_mode=False`` promise: only the sync method is used).
    """

    def __init__(self, model: DeepEvalBaseLLM, *, use_async: bool = True) -> None:
        self.model = model
        self.use_async = use_async
        self.model_id = str(model.get_model_name())
        method = model.a_generate if use_async else model.generate
        self._passes_schema = _accepts_schema(method)

    async def generate(self, prompt: str, schema: type[T]) -> T:
        kwargs: dict[str, Any] = {"schema": schema} if self._passes_schema else {}
        if self.use_async:
            output = self.model.a_generate(prompt, **kwargs)
            if inspect.isawaitable(output):
                output = await output
        else:
            output = await asyncio.to_thread(self.model.generate, prompt, **kwargs)
        result, cost = split_cost(output)
        usage = current_usage.get()
        if usage is not None:
            usage.add(cost)
        return normalise_output(result, schema, self.model_id)


def is_core_judge(model: object) -> bool:
    """Whether ``model`` is a summary-eval judge (``shared.OpenAIJudge``, a scripted judge)
    rather than a DeepEval model: it has the core's ``generate(prompt, schema)`` coroutine and a
    ``model_id``, and is not a ``DeepEvalBaseLLM``."""
    return (
        not isinstance(model, DeepEvalBaseLLM | str)
        and model is not None
        and isinstance(getattr(model, "model_id", None), str)
        and inspect.iscoroutinefunction(getattr(model, "generate", None))
    )


def judge_for(model: DeepEvalBaseLLM, *, use_async: bool = True) -> DeepEvalJudge:
    """One adapter per (model object, mode), so every metric built on the same model, including
    the per-test-case copies ``deepeval.evaluate()`` makes, shares one cache and one
    de-duplication of source-only calls. It is kept on the model object and freed with it
    (:func:`shared.adapter_kit.attached`); a model that takes no attributes (``__slots__``) gets
    a new adapter per call: same scores, no sharing."""
    return attached(
        model, (DeepEvalJudge, use_async), lambda: DeepEvalJudge(model, use_async=use_async)
    )
