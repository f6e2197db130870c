"""DataFrames as context in %%chat: {df} sends a compact description, {df:full} the table; both in the trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from aiforge.core.describe import describe
from aiforge.core.tokens import estimate_tokens
from aiforge.jupyter.interpolation import interpolate
from aiforge.providers.scripted import ScriptedProvider
from tests.jupyter.test_magics import run, scripted_agent

SALES = pd.DataFrame({"region": ["north", "south", None] * 100, "units": np.arange(300)})


def sent_text(provider: ScriptedProvider) -> str:
    return provider.calls[-1].messages[-1]["content"]


def test_a_dataframe_is_sent_as_its_description(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("ok")
    shell.user_ns["sales"] = SALES

    run(shell, "%%chat -a agent\nWhich region sells most?\n{sales}")

    assert sent_text(provider) == "Which region sells most?\n" + describe(SALES, name="sales")
    assert "| region | " in sent_text(provider) and "| units | int64 | 0 |" in sent_text(provider)


def test_what_was_sent_is_first_in_the_trace(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], _ = scripted_agent("ok")
    shell.user_ns["sales"] = SALES

    run(shell, "%%chat -a agent\nSummarise {sales['units']}")

    record = shell.user_ns["_chat"].trace[0]
    assert (record["step"], record["name"], record["input"]) == ("context", "{sales['units']}", "Series 300")
    assert record["output"] == describe(SALES["units"], name="sales['units']")
    assert shell.user_ns["_chat"].trace_dataframe().iloc[0]["step"] == "context"


def test_a_small_frame_is_sent_whole(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("ok")
    reviews = ["Great kettle", "Broke after a week", "Fine", "Arrived late but works", "Loud", "Love it"]
    shell.user_ns["df"] = pd.DataFrame({"review": reviews, "stars": [5, 1, 3, 4, 2, 5]})

    run(shell, "%%chat -a agent\nWhich reviews are negative?\n{df}")

    text = sent_text(provider)
    assert "All 6 rows:" in text and "sampled" not in text
    for position, review in enumerate(reviews):
        assert f"| {position} | {review} |" in text


def test_a_frame_over_the_budget_is_sampled_under_it_and_the_text_says_so(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    monkeypatch.setenv("AIFORGE_CONTEXT_MAX_TOKENS", "300")
    shell.user_ns["orders"] = pd.DataFrame({"item": [f"order {i}" for i in range(5000)], "qty": np.arange(5000)})

    run(shell, "%%chat\n{orders}")

    sent = shell.user_ns["_chat"].trace[0]["output"]
    assert estimate_tokens(sent) <= 300
    assert "of 5,000 rows, sampled evenly over the DataFrame" in sent and "over the 300-token limit" in sent
    assert "| 0 | order 0 | 0 |" in sent and "| 4999 | order 4999 | 4999 |" in sent


def test_full_sends_every_row(shell: InteractiveShell) -> None:
    shell.user_ns["agent"], provider = scripted_agent("ok")
    shell.user_ns["sales"] = SALES

    run(shell, "%%chat -a agent\n{sales:full}")

    assert "| 298 | south | 298 |" in sent_text(provider) and len(sent_text(provider).splitlines()) == 302


def test_the_token_budget_is_the_context_max_tokens_setting(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = pd.DataFrame({f"c{i}": range(100) for i in range(40)})
    monkeypatch.setenv("AIFORGE_PROVIDER", "scripted")
    monkeypatch.setenv("AIFORGE_CONTEXT_MAX_TOKENS", "200")
    shell.user_ns["wide"] = wide

    run(shell, "%%chat\n{wide}")

    assert estimate_tokens(shell.user_ns["_chat"].trace[0]["output"]) <= 200


def test_a_format_on_anything_but_a_table_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="for DataFrames and Series only"):
        interpolate("{n:full}", {"n": 3})
    with pytest.raises(UsageError, match="unknown format 'head'.*{df:full}"):
        interpolate("{df:head}", {"df": SALES})


def test_model_output_is_never_executed(shell: InteractiveShell, tmp_path) -> None:
    marker = tmp_path / "pwned"
    code = f"```python\nopen({str(marker)!r}, 'w').write('x')\n```"
    shell.user_ns["agent"], _ = scripted_agent(code, "{__import__('os').getcwd()}")

    run(shell, "%%chat -a agent -f code\nwrite code")
    run(shell, "%%chat -a agent\nand braces")

    assert not marker.exists()
    assert shell.user_ns["_chat"].message == "{__import__('os').getcwd()}"
