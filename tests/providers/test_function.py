"""A plain function registered as a provider: sync or async, params passed, failures as ProviderError."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import aiforge
from aiforge.core.settings import load_settings
from aiforge.core.types import CallParams, Completion, Message, ProviderError
from aiforge.providers import create_provider
from aiforge.providers.base import Provider

PARAMS = CallParams(model="my-model", temperature=0.3, max_tokens=50)


def registered(name: str, fn: Any) -> Provider:
    """The provider the registry builds for ``fn`` registered as ``name``."""
    aiforge.register_provider(name, fn)
    return create_provider(load_settings(PROVIDER=name))


def complete(provider: Provider, messages: list[Message], params: CallParams = PARAMS) -> Completion:
    return asyncio.run(provider.complete(messages, None, params))


def test_a_sync_function_answers_as_a_provider() -> None:
    provider = registered("fn_sync", lambda messages, **params: "hello")

    completion = complete(provider, [{"role": "user", "content": "hi"}])

    assert (completion.text, completion.finish_reason, completion.model) == ("hello", "stop", "my-model")


def test_an_async_function_is_awaited() -> None:
    async def answer(messages: list[dict[str, str]], **params: Any) -> str:
        await asyncio.sleep(0)
        return "async hello"

    provider = registered("fn_async", answer)

    assert complete(provider, [{"role": "user", "content": "hi"}]).text == "async hello"


def test_the_function_gets_the_call_params() -> None:
    seen: dict[str, Any] = {}

    def answer(messages: list[dict[str, str]], **params: Any) -> str:
        seen.update(params)
        return "ok"

    complete(registered("fn_params", answer), [{"role": "user", "content": "hi"}])

    assert seen == {"model": "my-model", "temperature": 0.3, "max_tokens": 50}


def test_the_function_gets_plain_role_and_content_messages() -> None:
    seen: list[list[dict[str, str]]] = []
    messages: list[Message] = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "weather", "arguments": {}}]},
        {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
    ]

    complete(registered("fn_plain", lambda m, **p: seen.append(m) or "ok"), messages)

    assert seen == [
        [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": ""},
            {"role": "tool", "content": "sunny"},
        ]
    ]


def test_a_sync_function_runs_off_the_event_loop_thread() -> None:
    threads: list[threading.Thread] = []

    async def call(provider: Provider) -> None:
        await provider.complete([{"role": "user", "content": "hi"}], None, PARAMS)

    asyncio.run(call(registered("fn_thread", lambda m, **p: threads.append(threading.current_thread()) or "ok")))

    assert threads and threads[0] is not threading.main_thread()


def test_without_a_model_the_completion_is_named_for_the_provider() -> None:
    completion = complete(registered("fn_named", lambda m, **p: "ok"), [], CallParams(model=""))

    assert completion.model == "fn_named"


def test_a_failing_function_is_a_provider_error_naming_it() -> None:
    def broken(messages: list[dict[str, str]], **params: Any) -> str:
        raise RuntimeError("backend down")

    with pytest.raises(ProviderError) as raised:
        complete(registered("fn_broken", broken), [{"role": "user", "content": "hi"}])

    assert raised.value.message == "custom provider 'fn_broken' raised RuntimeError: backend down"
    assert raised.value.provider == "fn_broken"
    assert isinstance(raised.value.__cause__, RuntimeError)


def test_a_failing_async_function_is_a_provider_error() -> None:
    async def broken(messages: list[dict[str, str]], **params: Any) -> str:
        raise ValueError("bad input")

    with pytest.raises(ProviderError, match="raised ValueError: bad input"):
        complete(registered("fn_async_broken", broken), [{"role": "user", "content": "hi"}])


def test_a_function_that_returns_no_text_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="'fn_none' must return str, got NoneType"):
        complete(registered("fn_none", lambda m, **p: None), [{"role": "user", "content": "hi"}])


def test_a_function_provider_has_no_native_tools_or_streaming() -> None:
    provider = registered("fn_caps", lambda m, **p: "ok")

    assert not provider.supports_native_tools
    assert not provider.supports_streaming


def test_its_repr_names_the_function() -> None:
    def my_llm(messages: list[dict[str, str]], **params: Any) -> str:
        return "ok"

    text = repr(registered("fn_repr", my_llm))

    assert "'fn_repr'" in text and "my_llm" in text
