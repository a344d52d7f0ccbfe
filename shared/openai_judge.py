"""A judge for any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, llama.cpp).

Structured output: JSON-schema ``response_format`` where the server supports it, JSON mode with
the schema in the prompt otherwise (``structured="auto"`` switches once, on the first refusal).
Transport errors (429, 5xx, timeouts) are retried with exponential backoff by the OpenAI SDK
itself (``max_retries``); invalid JSON raises :class:`JudgeOutputError`, which the validating
wrapper retries with the error fed back.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from ._replies import parse_json_reply
from .judge import JudgeOutputError
from .schemas import reply_token_limit

T = TypeVar("T", bound=BaseModel)

DEFAULT_MODEL = "gpt-4o-mini"
SYSTEM_PROMPT = (
    "You are a careful, strict evaluator of summaries. Follow the task exactly and reply with a "
    "single JSON object only."
)


class OpenAIJudge:
    """``OpenAIJudge(model, base_url=..., api_key=...)``; unset arguments come from the
    environment: ``OPENAI_MODEL`` (else gpt-4o-mini), ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``.

    ``usage`` accumulates prompt/completion tokens and calls reported by the server.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
        structured: Literal["auto", "json_schema", "json_object"] = "auto",
        timeout: float = 120.0,
        max_retries: int = 4,
        client: Any | None = None,
    ) -> None:
        from openai import AsyncOpenAI

        self.model = model or os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        if structured not in ("auto", "json_schema", "json_object"):
            raise ValueError(f"structured must be auto, json_schema or json_object: {structured!r}")
        self.structured = structured
        self._use_schema = structured != "json_object"
        self._own_clients = client is None
        if client is None:
            base_url = base_url or os.environ.get("OPENAI_BASE_URL")
            api_key = api_key or os.environ.get("OPENAI_API_KEY")
            if api_key is None:
                if base_url is None:
                    raise ValueError(
                        "no API key: pass api_key= or set OPENAI_API_KEY (or point base_url / "
                        "OPENAI_BASE_URL at a local OpenAI-compatible server)"
                    )
                api_key = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) ignore it
            self._client_args = {
                "base_url": base_url,
                "api_key": api_key,
                "timeout": timeout,
                "max_retries": max_retries,
            }
            client = AsyncOpenAI(**self._client_args)
        self.client = client
        self.base_url = str(client.base_url)
        # An AsyncOpenAI client's kept-alive connections belong to the event loop that opened
        # them; each sync call (asyncio.run) has a new loop, so a client is made per loop.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._clients = weakref.WeakKeyDictionary()
        self.usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}

    def _client(self) -> Any:
        if not self._own_clients:
            return self.client  # the caller's client: the caller owns its loop
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = AsyncOpenAI(**self._client_args)
        return client

    @property
    def model_id(self) -> str:
        return self.model

    @property
    def settings(self) -> dict[str, Any]:
        """What changes the output (cache keys, signature); not timeouts or retry counts."""
        return {
            "base_url": self.base_url,  # two servers may serve different weights under one name
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }

    async def generate(self, prompt: str, schema: type[T]) -> T:
        content = await self._complete(prompt, schema)
        return parse_json_reply(content, schema)

    async def _complete(self, prompt: str, schema: type[BaseModel]) -> str:
        from openai import BadRequestError

        if self._use_schema:
            try:
                return await self._request(
                    [{"role": "user", "content": prompt}],
                    {
                        "type": "json_schema",
                        "json_schema": {
                            "name": schema.__name__,
                            "schema": schema.model_json_schema(),
                            "strict": False,
                        },
                    },
                    schema,
                )
            except BadRequestError as exc:
                if self.structured == "json_schema" or "response_format" not in str(exc):
                    raise
                self._use_schema = False  # the server has no JSON-schema mode: use JSON mode
        schema_text = json.dumps(schema.model_json_schema())
        return await self._request(
            [
                {"role": "system", "content": f"{SYSTEM_PROMPT}\nJSON schema: {schema_text}"},
                {"role": "user", "content": prompt},
            ],
            {"type": "json_object"},
            schema,
        )

    async def _request(
        self, messages: list[dict[str, str]], response_format: dict, schema: type[BaseModel]
    ) -> str:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages
            if messages[0]["role"] == "system"
            else [{"role": "system", "content": SYSTEM_PROMPT}, *messages],
            "temperature": self.temperature,
            "response_format": response_format,
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        # bounded replies: the user's max_tokens, else the most the schema's bounds allow
        max_tokens = self.max_tokens if self.max_tokens is not None else reply_token_limit(schema)
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        response = await self._client().chat.completions.create(**kwargs)
        self.usage["calls"] += 1
        if response.usage is not None:
            self.usage["prompt_tokens"] += response.usage.prompt_tokens or 0
            self.usage["completion_tokens"] += response.usage.completion_tokens or 0
        choice = response.choices[0]
        content = choice.message.content
        if not content:
            raise JudgeOutputError(f"empty reply (finish_reason={choice.finish_reason})")
        if choice.finish_reason == "length":
            raise JudgeOutputError(
                "reply cut off at the token limit (finish_reason=length)", content
            )
        return content
