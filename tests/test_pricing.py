"""The price table, overrides and local servers (shared.core.pricing)."""

import math

import pytest

from shared.core.pricing import FREE, Prices, is_local_url, resolve_prices, table_prices


def test_cost_counts_cached_tokens_at_their_own_price() -> None:
    prices = Prices(1.0, 0.25, 4.0, source="given")
    usage = {"prompt_tokens": 1_000_000, "cached_tokens": 400_000, "completion_tokens": 500_000}
    assert prices.cost(usage) == pytest.approx(0.6 + 0.1 + 2.0)


def test_cached_tokens_never_exceed_prompt_tokens() -> None:
    prices = Prices(1.0, 0.0, 0.0, source="given")
    assert prices.cost({"prompt_tokens": 10, "cached_tokens": 50}) == 0.0


def test_table_matches_dated_model_names_on_the_longest_prefix() -> None:
    mini = table_prices("gpt-4o-mini-2024-07-18")
    assert mini is not None and mini.input == 0.15
    assert table_prices("gpt-4o").input == 2.50
    assert table_prices("gpt-4o-minimal") is None
    assert table_prices("smollm2") is None


@pytest.mark.parametrize(
    "url,local",
    [
        ("http://127.0.0.1:8089/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        (None, False),
    ],
)
def test_local_servers(url: str | None, local: bool) -> None:
    assert is_local_url(url) is local


def test_resolution_order() -> None:
    assert resolve_prices("gpt-4o-mini", "http://127.0.0.1:8089/v1") is FREE
    assert resolve_prices("gpt-4o-mini", None).source.startswith("list price")
    assert resolve_prices("unknown-model", "https://example.invalid/v1") is None
    given = resolve_prices("gpt-4o-mini", "http://127.0.0.1/v1", price_in=1, price_out=2)
    assert (given.input, given.cached_input, given.output, given.source) == (1, 1, 2, "given")
    with pytest.raises(ValueError, match="--price-out"):
        resolve_prices("gpt-4o-mini", price_in=1)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0])
def test_prices_must_be_finite_and_not_negative(bad: float) -> None:
    with pytest.raises(ValueError):
        Prices(bad, 0.0, 0.0, source="given")
