"""Truncation is never silent: ``ChatResponse.truncated`` on openai and anthropic (sync, stream, batch)."""

from __future__ import annotations

from aiforge.core.aio import run_sync
from aiforge.core.render import truncation_note
from fakellm import LLMServer, Reply
from tests.chat.conftest import WireAgent, make_wire_agent


async def _streamed(agent, message: str):  # noqa: ANN001, ANN202
    stream = agent.stream_turn(message)
    text = "".join([delta async for delta in stream])
    return text, stream.response


def test_a_reply_cut_at_the_limit_is_truncated(srv: LLMServer, wire_agent: WireAgent) -> None:
    srv.enqueue(Reply("The story begins", stop_reason="length", usage={"output_tokens": 3}))
    response = wire_agent(MAX_TOKENS=3).chat("Tell me a story")
    assert response.truncated is True
    assert response.message == "The story begins"
    assert response.trace[-1]["finish_reason"] in ("length", "max_tokens")
    assert truncation_note(response) == "cut at 3 tokens; set MAX_TOKENS for more"
    assert "cut at 3 tokens" in response._footer()


def test_a_finished_reply_is_not_truncated(srv: LLMServer, wire_agent: WireAgent) -> None:
    srv.enqueue(Reply("Paris."))
    response = wire_agent().chat("Capital of France?")
    assert response.truncated is False
    assert truncation_note(response) is None


def test_a_streamed_reply_cut_at_the_limit_is_truncated(srv: LLMServer, wire_agent: WireAgent) -> None:
    srv.enqueue(Reply("The story begins", stop_reason="length"))
    text, response = run_sync(_streamed(wire_agent(), "Tell me a story"))
    assert text == "The story begins"
    assert response.truncated is True


def test_a_batch_has_a_truncated_column(srv: LLMServer, wire_agent: WireAgent) -> None:
    srv.enqueue(Reply("cut", stop_reason="length"), Reply("done"))
    batch = wire_agent().run_batch(["one", "two"], concurrency=1)
    frame = batch.to_dataframe()
    assert frame["truncated"].tolist() == [True, False]


def test_only_the_final_call_counts(srv: LLMServer, wire_agent: WireAgent, calc_tool) -> None:  # noqa: ANN001
    from fakellm import ToolCallSpec

    srv.enqueue(Reply(tool_calls=[ToolCallSpec("calculator", {"expression": "2+2"})]), Reply("4"))
    response = wire_agent(tools=[calc_tool]).chat("2+2?")
    assert response.truncated is False


def test_the_cli_and_the_notebook_footer_say_the_reply_was_cut(srv: LLMServer, monkeypatch) -> None:  # noqa: ANN001
    import io

    from aiforge.cli import main
    from aiforge.jupyter.display import footer_text

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
    srv.enqueue(Reply("Once upon", stop_reason="length", usage={"output_tokens": 2}))
    out = io.StringIO()
    assert main(["chat", "-p", "openai", "--max-tokens", "2", "Tell me a story"], out=out) == 0
    assert out.getvalue() == "Once upon\n[cut at 2 tokens; set MAX_TOKENS for more]\n"
    srv.enqueue(Reply("Once upon", stop_reason="length", usage={"output_tokens": 2}))
    response = make_wire_agent(srv, "openai").chat("Tell me a story")
    assert footer_text(response).endswith("cut at 2 tokens; set MAX_TOKENS for more")


def test_a_typed_answer_cut_at_the_token_limit_is_not_asked_again(srv: LLMServer, wire_agent: WireAgent) -> None:
    """Retrying at the same MAX_TOKENS cuts the JSON again: one request, and the error says to raise the limit."""
    import pytest
    from pydantic import BaseModel

    from aiforge import OutputValidationError

    class Review(BaseModel):
        sentiment: str
        rating: int

    srv.enqueue(Reply('{"sentiment": "posi', stop_reason="length", usage={"output_tokens": 6}))
    agent = wire_agent()
    with pytest.raises(OutputValidationError, match="cut at the token limit.*raise MAX_TOKENS"):
        agent.chat("Great blender", output=Review)
    assert len(srv.requests) == 1
    assert agent.history == []
