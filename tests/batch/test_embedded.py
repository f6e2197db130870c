"""A label or extraction batch on the embedded model warns once, in one line, that its columns need a real
provider (issue 22 item 15); other providers and untyped batches do not warn."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from pydantic import BaseModel

from aiforge import ChatAgent
from aiforge.batch import embedded
from aiforge.core.errors import EmbeddedModelWarning, FailedRowsWarning
from aiforge.providers.scripted import ScriptedProvider

REVIEWS = pd.DataFrame({"review": ["Great kettle, love it", "Broke after a week"]}, index=["k1", "k2"])


class Product(BaseModel):
    name: str


@pytest.fixture
def a_fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning is once per process: forget that an earlier test of this process gave it."""
    monkeypatch.setattr(embedded, "_warned", False)


@pytest.mark.embedded
@pytest.mark.usefixtures("a_fresh_process")
def test_a_typed_batch_on_the_embedded_model_warns_once_in_one_line() -> None:
    agent = ChatAgent(provider="local", MAX_TOKENS=16)

    with pytest.warns(EmbeddedModelWarning) as caught:
        labels = REVIEWS.aiforge.classify("Sentiment of: {review}", ["pos", "neg"], agent=agent)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddedModelWarning)
        # 16 tokens may cut a row's JSON on this model: that row's FailedRowsWarning is not what is tested here
        warnings.simplefilter("ignore", FailedRowsWarning)
        REVIEWS.aiforge.extract("review", Product, agent=agent)  # once per process: no second warning

    assert [w.category for w in caught] == [EmbeddedModelWarning] and caught[0].filename == __file__
    message = str(caught[0].message)
    assert "\n" not in message and "for trying aiforge offline" in message and "real provider" in message
    assert labels.index.tolist() == ["k1", "k2"]


@pytest.mark.embedded
@pytest.mark.usefixtures("a_fresh_process")
def test_an_untyped_batch_or_an_estimate_on_the_embedded_model_does_not_warn() -> None:
    agent = ChatAgent(provider="local", MAX_TOKENS=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddedModelWarning)
        agent.run_batch(["Say hi"])
        agent.estimate_batch(["Say hi"], output=bool)


@pytest.mark.usefixtures("a_fresh_process")
def test_a_typed_batch_on_another_provider_does_not_warn() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default='"pos"'))
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddedModelWarning)
        REVIEWS.aiforge.classify("Sentiment of: {review}", ["pos", "neg"], agent=agent)


def test_the_warning_shows_as_one_line_without_a_path_or_a_source_line() -> None:
    shown = warnings.formatwarning("use a real provider", EmbeddedModelWarning, "/tmp/ipykernel_1/2.py", 16, "x = 1")
    assert shown == "EmbeddedModelWarning: use a real provider\n"
    other = warnings.formatwarning("other", UserWarning, "/tmp/ipykernel_1/2.py", 16, "x = 1")
    assert other.startswith("/tmp/ipykernel_1/2.py:16: UserWarning: other") and "x = 1" in other


@pytest.mark.embedded
@pytest.mark.usefixtures("a_fresh_process")
def test_a_typed_batch_with_a_bad_template_is_the_usage_error_alone(tmp_path, capsys) -> None:
    from aiforge.cli import main

    source = tmp_path / "reviews.csv"
    source.write_text("review\nGreat kettle\n", encoding="utf-8")
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        code = main(["batch", str(source), "--prompt", "{reveiw}", "--labels", "pos,neg", "-p", "local"])
        with pytest.raises(ValueError, match="did you mean 'review'"):
            REVIEWS.aiforge.map("Product of: {reveiw}", output=Product, agent=ChatAgent(provider="local"))
    assert code == 2 and "did you mean 'review'?" in capsys.readouterr().err
    assert [w.category.__name__ for w in shown] == []
    with pytest.warns(EmbeddedModelWarning):  # not spent by the failed batches: the next real one still warns
        REVIEWS.aiforge.classify("{review}", ["pos", "neg"], agent=ChatAgent(provider="local", MAX_TOKENS=4))
