"""dedup, join and cluster on a provider whose vectors are a chat model's pooled states (``embeds_chat_model``, the
embedded model's) warn once per call, in one line (``ChatModelVectorsWarning``); on embedding vectors, not at all."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.errors import ChatModelVectorsWarning, EmbeddedModelWarning
from aiforge.providers.scripted import ScriptedProvider, structured

TICKETS = pd.DataFrame({"text": ["the kettle leaks", "my toaster burns", "the kettle is leaking"]}, index=[1, 2, 3])
PRODUCTS = pd.DataFrame({"name": [f"product {n}" for n in range(40)]})  # over 30 rows: the join embeds


class PooledChatModel(ScriptedProvider):
    """The scripted provider's word vectors, presented as a chat model's pooled states (as the embedded model's)."""

    @property
    def embeds_chat_model(self) -> bool:
        return True


OPERATIONS: dict[str, Callable[[ChatAgent], Any]] = {
    "dedup": lambda agent: TICKETS.aiforge.dedup("text", agent=agent),
    "cluster": lambda agent: TICKETS.aiforge.cluster("text", 2, agent=agent),
    "join": lambda agent: TICKETS.aiforge.join(
        PRODUCTS, "{left.text} / {right.name}?", agent=agent, strategy="pairs", candidates=1
    ),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_each_call_on_a_chat_models_vectors_warns_once_in_one_line(operation: str) -> None:
    agent = ChatAgent(provider=PooledChatModel(default="false"), memory="none", output_retries=0)
    for _ in range(2):  # every call says it, not only the first of the process
        with pytest.warns(ChatModelVectorsWarning) as caught:
            OPERATIONS[operation](agent)
        assert len(caught) == 1 and caught[0].filename == __file__
        message = str(caught[0].message)
        assert message.startswith(f"{operation}: scripted-model is a chat model") and "\n" not in message
        assert "not trained embedding vectors" in message and "crowd near 1" in message
        assert "GGUF embedding model" in message and "provider='openai'" in message
    assert issubclass(ChatModelVectorsWarning, EmbeddedModelWarning)
    shown = warnings.formatwarning(message, ChatModelVectorsWarning, "/tmp/ipykernel_1/3.py", 4, "ids = ...")
    assert shown == f"ChatModelVectorsWarning: {message}\n"


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_embedding_vectors_give_no_warning(operation: str) -> None:
    agent = ChatAgent(provider=ScriptedProvider(default="false"), memory="none", output_retries=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OPERATIONS[operation](agent)


def test_a_join_that_embeds_nothing_does_not_warn() -> None:
    # Up to 30 right rows the join classifies over them: no vector is compared.
    agent = ChatAgent(provider=PooledChatModel(default=lambda _: structured([])), memory="none", output_retries=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TICKETS.aiforge.join(PRODUCTS.head(3), "{left.text} / {right.name}?", agent=agent)
