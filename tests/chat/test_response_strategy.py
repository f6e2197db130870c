"""What a batch strategy adds to a turn is one ``StrategyFields`` at ``response.strategy``; the spec's fields stay."""

import pytest
from pydantic import ValidationError

from aiforge import ChatAgent, ChatResponse
from aiforge.chat.response import StrategyFields

SPEC_FIELDS = {
    "message", "conversation_id", "tool_calls", "iterations", "memory_mode", "cost",
    "input_tokens", "output_tokens", "model", "trace_id", "latency_ms",
}  # fmt: skip


def test_the_spec_fields_stay_fields_and_the_strategy_fields_are_one_sub_object() -> None:
    fields = set(ChatResponse.model_fields)
    assert SPEC_FIELDS <= fields
    assert "strategy" in fields and not fields & {"packed", "confidence", "label_probabilities"}
    assert ChatResponse.model_fields["strategy"].annotation is StrategyFields


def test_a_generated_turn_has_no_strategy_fields_set() -> None:
    response = ChatAgent(provider="scripted").chat("hello")
    assert response.strategy == StrategyFields()
    assert (response.packed, response.confidence, response.label_probabilities) == (False, None, None)


def test_the_old_names_read_the_strategy_and_are_read_only() -> None:
    scored = ChatResponse(message="pos", conversation_id="c", confidence=0.8, label_probabilities={"pos": 0.8})
    assert scored.strategy == StrategyFields(confidence=0.8, label_probabilities={"pos": 0.8})
    assert scored.confidence == 0.8 and scored.label_probabilities == {"pos": 0.8} and not scored.packed
    with pytest.raises((AttributeError, ValidationError)):
        scored.confidence = 0.1  # type: ignore[misc]


def test_a_checkpoint_written_with_the_flat_names_reads_back_into_strategy() -> None:
    written = ChatResponse(message="x", conversation_id="c", packed=True).to_payload()
    assert written["strategy"]["packed"] is True and "packed" not in written
    assert ChatResponse.from_payload(written, None).packed
    old = {key: value for key, value in written.items() if key != "strategy"} | {"packed": True, "confidence": 0.5}
    assert ChatResponse.from_payload(old, None).strategy == StrategyFields(packed=True, confidence=0.5)


def test_relabelling_a_scored_row_changes_its_confidence_only() -> None:
    scored = ChatResponse(message="x", conversation_id="c", confidence=0.6, label_probabilities={"a": 0.6, "b": 0.4})
    moved = scored.relabelled("b", 0.55)
    assert moved.output == "b" and moved.confidence == 0.55
    assert moved.label_probabilities == {"a": 0.6, "b": 0.4}
