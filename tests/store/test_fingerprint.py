"""Fingerprints: stable, sensitive to everything that determines a reply, blind to dict order and credentials."""

from __future__ import annotations

import inspect
import math
from typing import Any

import pytest
from pydantic import SecretStr

from aiforge.store.fingerprint import batch_fingerprint, canonical_json, fingerprint, reply_fingerprint

REQUEST: dict[str, Any] = {
    "provider": "openai",
    "endpoint": "https://api.openai.com/v1",
    "model": "gpt-4o-mini",
    "params": {"temperature": 0.0, "max_tokens": 100},
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    "tools": [{"name": "add", "description": "Add.", "parameters": {"type": "object", "properties": {}}}],
    "output_schema": {"type": "object", "properties": {"label": {"type": "string"}}},
}


def test_the_fingerprint_of_a_request_is_pinned() -> None:
    # A changed digest means every cache on disk misses: bump SCHEME on purpose, then update this value.
    assert reply_fingerprint(**REQUEST) == "7a37b8adf9c9fe8d5bcfe1aab22f70d1f43cefdb57d59be0c52ddcc74ef407a9"


def test_a_fingerprint_is_sha256_hex() -> None:
    digest = fingerprint({"a": 1})
    assert len(digest) == 64 and int(digest, 16) >= 0


@pytest.mark.parametrize(
    ("component", "other"),
    [
        ("provider", "anthropic"),
        ("endpoint", "http://127.0.0.1:8000/v1"),
        ("model", "gpt-4o"),
        ("params", {"temperature": 0.7, "max_tokens": 100}),
        ("params", {"temperature": 0.0, "max_tokens": 100, "seed": 1}),
        ("messages", [{"role": "user", "content": "Hi"}]),
        ("messages", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]),
        ("tools", []),
        ("output_schema", None),
        ("output_schema", {"type": "object", "properties": {"label": {"type": "integer"}}}),
    ],
)
def test_every_component_changes_the_fingerprint(component: str, other: Any) -> None:
    assert reply_fingerprint(**{**REQUEST, component: other}) != reply_fingerprint(**REQUEST)


def test_dict_order_does_not_change_the_fingerprint() -> None:
    reordered = {
        key: (dict(reversed(list(value.items()))) if isinstance(value, dict) else value)
        for key, value in reversed(list(REQUEST.items()))
    }
    reordered["messages"] = [dict(reversed(list(m.items()))) for m in REQUEST["messages"]]
    assert reply_fingerprint(**reordered) == reply_fingerprint(**REQUEST)


def test_message_order_changes_the_fingerprint() -> None:
    swapped = {**REQUEST, "messages": list(reversed(REQUEST["messages"]))}
    assert reply_fingerprint(**swapped) != reply_fingerprint(**REQUEST)


def test_integral_floats_equal_ints_and_tuples_equal_lists() -> None:
    assert fingerprint({"t": 1.0, "stop": ("a", "b")}) == fingerprint({"t": 1, "stop": ["a", "b"]})
    assert fingerprint({"t": 0.5}) != fingerprint({"t": 0.4})
    assert fingerprint({"t": None}) != fingerprint({})
    assert fingerprint(True) != fingerprint(1)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_is_refused_naming_where(number: float) -> None:
    with pytest.raises(ValueError, match=r"value\.params\.temperature"):
        canonical_json({"params": {"temperature": number}})


@pytest.mark.parametrize("value", [SecretStr("sk-x"), object(), {1: "int key"}, {"a": {1, 2}}])
def test_values_that_are_not_json_are_refused(value: Any) -> None:
    with pytest.raises(TypeError, match="Cannot fingerprint"):
        fingerprint(value)


def test_lone_surrogates_are_fingerprinted_and_kept_apart() -> None:
    first = fingerprint({"content": "bad \udcff byte"})
    assert first == fingerprint({"content": "bad \udcff byte"})
    assert first != fingerprint({"content": "bad \udcfe byte"})
    assert first != fingerprint({"content": "bad \ufffd byte"})


def test_credentials_in_an_endpoint_never_reach_the_fingerprint() -> None:
    secret = "sk-live-SECRET-1234"
    with_secret = f"https://user:{secret}@API.example.com:8443/v1/?api-key={secret}#{secret}"
    assert reply_fingerprint(**{**REQUEST, "endpoint": with_secret}) == reply_fingerprint(
        **{**REQUEST, "endpoint": "https://api.example.com:8443/v1"}
    )


def test_the_reply_fingerprint_takes_no_key_headers_or_settings() -> None:
    parameters = set(inspect.signature(reply_fingerprint).parameters)
    assert parameters == {"provider", "endpoint", "model", "params", "messages", "tools", "output_schema"}


def test_a_batch_fingerprint_depends_on_items_their_order_and_settings() -> None:
    items = [fingerprint(f"row {i}") for i in range(3)]
    batch = batch_fingerprint(items, {"model": "m", "temperature": 0})
    assert batch.key == batch_fingerprint(items, {"temperature": 0.0, "model": "m"}).key
    assert batch.key != batch_fingerprint(items[::-1], {"model": "m", "temperature": 0}).key
    assert batch.key != batch_fingerprint(items[:2], {"model": "m", "temperature": 0}).key
    assert batch.key != batch_fingerprint(items, {"model": "m2", "temperature": 0}).key
    assert batch.inputs == batch_fingerprint(items, {"model": "m2"}).inputs
