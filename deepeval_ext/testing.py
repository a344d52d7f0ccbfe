"""A ``DeepEvalBaseLLM`` answering through :class:`shared.testing.FakeJudge`, for offline tests.

It lets ``deepeval.evaluate()``, ``deepeval test run`` and ``assert_test`` run the real metric
code with no LLM. ``output`` picks which of DeepEval's reply shapes it returns, so tests cover
every shape the adapter must accept: a pydantic instance, a JSON string, or ``(result, cost)``.
"""

from __future__ import annotations

from typing import Any, Literal

from deepeval.models import DeepEvalBaseLLM
from pydantic import BaseModel

from shared.adapter_kit import run_sync
from shared.testing import FakeJudge

OutputShape = Literal["instance", "json", "tuple"]


class CostWithTokens(float):
    """A call's cost carrying its token counts, as DeepEval 4's native models return it
    (``deepeval.models.utils.EvaluationCost``; defined here so every DeepEval version has it)."""

    input_tokens: int
    output_tokens: int

    def __new__(cls, value: float, input_tokens: int, output_tokens: int) -> CostWithTokens:
        cost = super().__new__(cls, value)
        cost.input_tokens, cost.output_tokens = input_tokens, output_tokens
        return cost


class FakeDeepEvalModel(DeepEvalBaseLLM):
    """``FakeDeepEvalModel(judge=FakeJudge(...), output="tuple", cost_per_call=0.001)``.

    ``tokens_per_call=(input, output)`` (with ``output="tuple"``) reports token counts on each
    call's cost, as DeepEval's native models do.

    Without a schema (a caller that does not pass one) it returns the JSON text, as a plain
    text model would. ``judge.prompts`` records every prompt, for assertions.
    """

    def __init__(
        self,
        judge: FakeJudge | None = None,
        *,
        output: OutputShape = "instance",
        cost_per_call: float = 0.0,
        tokens_per_call: tuple[int, int] | None = None,
        name: str = "fake-deepeval-model",
    ) -> None:
        if output not in ("instance", "json", "tuple"):
            raise ValueError(f"output must be 'instance', 'json' or 'tuple', got {output!r}")
        self.judge = judge if judge is not None else FakeJudge(model_id=name)
        self.output = output
        self.cost_per_call = cost_per_call
        self.tokens_per_call = tokens_per_call
        super().__init__(name)

    def load_model(self) -> FakeJudge:
        return self.judge

    def get_model_name(self) -> str:
        return self.name

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        return await self._reply(prompt, schema)

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        return run_sync(lambda: self._reply(prompt, schema))

    async def _reply(self, prompt: str, schema: type[BaseModel] | None) -> Any:
        if schema is None:
            raise ValueError("FakeDeepEvalModel needs the schema to know which task is asked")
        if self.output == "json":
            # scripted raw text passes through unchanged, so malformed replies reach the adapter
            return self.judge.answer_text(prompt, schema)
        answer = await self.judge.generate(prompt, schema)
        if self.output != "tuple":
            return answer
        if self.tokens_per_call is None:
            return answer, self.cost_per_call
        return answer, CostWithTokens(self.cost_per_call, *self.tokens_per_call)
