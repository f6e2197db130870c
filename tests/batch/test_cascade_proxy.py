"""Cascade(first="proxy") (issue 32): a logistic regression on the rows' embeddings, trained on half of the strong
model's sample and calibrated on the other half, keeps the rows it is confident on; the rest go to the strong model.
The strong model is scripted (planted themes, some noise); the vectors are the scripted provider's hashed words."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from aiforge import Cascade, ChatAgent, ConfigError
from aiforge.core.pricing import lookup_price
from aiforge.core.types import EmbeddingLimits, Message, UsageError
from aiforge.providers.scripted import ScriptedProvider, structured
from fakellm import LLMServer, RecordedRequest, Reply

THEMES = {
    "billing": ["invoice", "charged", "refund", "payment", "card", "bill"],
    "login": ["password", "login", "locked", "reset", "sign", "2fa"],
    "shipping": ["parcel", "delivery", "courier", "tracking", "shipped", "arrived"],
    "bug": ["crash", "error", "freezes", "broken", "exception", "glitch"],
    "account": ["profile", "email", "username", "delete", "settings", "avatar"],
    "feature": ["suggest", "wish", "feature", "add", "roadmap", "idea"],
    "pricing": ["plan", "discount", "upgrade", "tier", "price", "quote"],
    "privacy": ["gdpr", "data", "consent", "cookies", "tracking-data", "export"],
}
LABELS = list(THEMES)
FILLER = ["please", "help", "today", "again", "my", "the", "since", "monday", "hi", "team", "thanks", "urgent"]


needs_sklearn = pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None, reason="scikit-learn is in the [embeddings] extra, not installed"
)


def tickets(n: int, seed: int = 32) -> tuple[pd.DataFrame, dict[str, str]]:
    """``n`` tickets, each a few of its theme's words among filler (one in ten also carries another theme's words),
    and what the strong model answers for each text: its theme, or a random one 1 % of the time."""
    rng = random.Random(seed)
    rows, strong = [], {}
    for i in range(n):
        theme = rng.choice(LABELS)
        words = rng.sample(THEMES[theme], 3) + rng.sample(FILLER, 4)
        if rng.random() < 0.1:
            words += rng.sample(THEMES[rng.choice(LABELS)], 2)
        rng.shuffle(words)
        text = f"#{i} " + " ".join(words)
        rows.append({"ticket": text, "theme": theme})
        strong[text] = theme if rng.random() >= 0.01 else rng.choice(LABELS)
    return pd.DataFrame(rows), strong


def strong_provider(answers: dict[str, str], **options: Any) -> ScriptedProvider:
    def reply(messages: list[Message]) -> Any:
        return structured(answers[messages[-1]["content"]])

    return ScriptedProvider(default=reply, model="gpt-4o", **options)


@needs_sklearn
def test_the_proxy_keeps_rows_that_meet_the_target_on_held_out_rows_and_never_asks_them() -> None:
    df, answers = tickets(2000)
    strong = strong_provider(answers)
    labels = df.aiforge.classify(
        "{ticket}", labels=LABELS, cascade=Cascade(first="proxy", then=ChatAgent(provider=strong))
    )
    batch = labels.attrs["aiforge"]
    report = batch.cascade
    asked = [call.last_user_message for call in strong.calls]
    kept = [i for i, by in enumerate(report.answered_by) if by == "first"]
    assert report.by_first > 1000 and report.by_first + report.by_then == len(df)
    assert len(asked) == len(set(asked)) == report.by_then  # each row asked at most once
    assert not {df["ticket"].iloc[i] for i in kept} & set(asked)  # a row the proxy kept never reaches the strong model
    assert not set(kept) & set(report.sampled)
    agreement = sum(labels.iloc[i] == answers[df["ticket"].iloc[i]] for i in kept) / len(kept)
    assert agreement >= 0.9 and report.lower_bound >= 0.9 and report.agreement >= report.lower_bound
    assert report.trained_on == report.calibrated_on == len(report.sampled) == 200  # cross-fitted
    assert report.first_model == "proxy:scripted-embedding" and report.embedding_model == "scripted-embedding"
    assert report.embedding_requests == len(strong.embed_calls) == 1 and len(strong.embed_calls[0]) == len(df)
    assert report.kept_share == report.by_first / len(df)
    # Requests are what was sent: the strong model's and the embeddings', none for a row the proxy kept.
    assert batch.requests == len(strong.calls) + report.embedding_requests == report.by_then + 1
    frame = batch.to_dataframe()
    assert set(frame.loc[frame["answered_by"] == "first", "model"]) == {"proxy:scripted-embedding"}
    assert "proxy:scripted-embedding" in str(report)


@needs_sklearn
def test_the_same_seed_draws_the_same_sample_and_folds() -> None:
    df, answers = tickets(600)
    runs = [
        df.aiforge.classify(
            "{ticket}",
            labels=LABELS,
            cascade=Cascade(first="proxy", then=ChatAgent(provider=strong_provider(answers)), seed=seed),
        )
        .attrs["aiforge"]
        .cascade
        for seed in (1, 1, 2)
    ]
    assert runs[0].sampled == runs[1].sampled != runs[2].sampled
    assert runs[0].threshold == runs[1].threshold and runs[0].answered_by == runs[1].answered_by


@needs_sklearn
def test_labels_the_proxy_cannot_learn_keep_nothing_as_no_row_is_scored_by_a_model_that_saw_it() -> None:
    # The strong model answers at random: a model scored on its own training rows would agree with them (it fits
    # them), but out of fold it agrees one time in eight, so no threshold passes and every row goes to the strong one.
    df, _ = tickets(400)
    answers = {text: random.Random(text).choice(LABELS) for text in df["ticket"]}
    strong = strong_provider(answers)
    report = (
        df.aiforge.classify("{ticket}", labels=LABELS, cascade=Cascade(first="proxy", then=ChatAgent(provider=strong)))
        .attrs["aiforge"]
        .cascade
    )
    assert report.by_first == 0 and len(strong.calls) == 400 and "no threshold reached the target" in str(report)


@needs_sklearn
def test_texts_are_embedded_once_within_limits_and_a_truth_column_trains_without_the_strong_model() -> None:
    df, answers = tickets(500)
    df = pd.concat([df, df.iloc[:100]], ignore_index=True)
    strong = strong_provider(answers, embedding_limits=EmbeddingLimits(max_inputs=128))
    cascade = Cascade(first="proxy", then=ChatAgent(provider=strong), truth="theme")
    batch = df.aiforge.classify("{ticket}", labels=LABELS, cascade=cascade).attrs["aiforge"]
    assert [len(texts) for texts in strong.embed_calls] == [128, 128, 128, 116]
    assert batch.cascade.embedding_requests == 4
    assert batch.cascade.reference == "truth:theme" and batch.cascade.trained_on == 200
    assert len(strong.calls) == batch.cascade.by_then < 400


@pytest.mark.parametrize("output", [None, str, dict[str, int]])
def test_an_output_the_proxy_cannot_learn_is_refused_before_any_request(output: Any) -> None:
    strong = ScriptedProvider()
    with pytest.raises(UsageError, match=r'^Cascade\(first="proxy"\) learns labels .*not (free text|output=)'):
        ChatAgent(provider=strong).run_batch(["a", "b"], output=output, cascade=Cascade(first="proxy"))
    assert strong.calls == [] and strong.embed_calls == []


def test_the_estimate_prices_the_proxy_pass_as_its_embeddings() -> None:
    df, answers = tickets(300)
    strong = strong_provider(answers)
    estimate = ChatAgent(provider=strong, PRICES={"gpt-4o": {"input": 2.5, "output": 10.0}}).estimate_batch(
        df["ticket"].tolist(), cascade=Cascade(first="proxy")
    )
    plan = next(plan for plan in estimate.plans if plan.name == "cascade")
    assert plan.dollars is not None and plan.dollars_high is not None
    assert plan.dollars == pytest.approx(plan.dollars_high * 200 / 300)  # the embeddings are free: the sample alone
    assert strong.calls == [] and strong.embed_calls == []


@pytest.fixture
def wire() -> Iterator[tuple[LLMServer, dict[str, str]]]:
    """fakellm as OpenAI: the chat answers from the planted themes, the embeddings are its hashed vectors."""
    df, answers = tickets(600)

    def answer(request: RecordedRequest) -> Reply:
        label = answers[request.messages[-1]["content"]]
        return Reply(text=f'{{"value": "{label}"}}', usage={"input_tokens": 120, "output_tokens": 5})

    with LLMServer(default=answer) as server:
        yield server, answers


@needs_sklearn
def test_over_the_wire_the_rows_are_embedded_in_few_requests_priced_and_kept_rows_are_never_asked(
    wire: tuple[LLMServer, dict[str, str]],
) -> None:
    srv, answers = wire
    df = pd.DataFrame({"ticket": list(answers)})
    strong = ChatAgent(
        provider="openai",
        MODEL="gpt-4o",
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=srv.openai_base_url,
        EMBEDDING_MODEL="text-embedding-3-small",
    )
    labels = df.aiforge.classify("{ticket}", labels=LABELS, agent=strong, cascade=Cascade(first="proxy"))
    report = labels.attrs["aiforge"].cascade
    paths = [request.path for request in srv.requests]
    embedded = [request for request in srv.requests if request.path.endswith("/embeddings")]
    assert paths.count("/v1/chat/completions") == report.by_then and report.by_first > 100
    assert len(embedded) == report.embedding_requests and sum(len(r.body["input"]) for r in embedded) == 600
    assert paths.index("/v1/embeddings") == 0  # the rows are embedded before the strong model is asked
    price = lookup_price("text-embedding-3-small")
    assert price is not None and report.embedding_cost > 0 and report.embedding_model == "text-embedding-3-small"
    assert report.first_cost == pytest.approx(report.embedding_cost)
    asked = {request.messages[-1]["content"] for request in srv.requests if request.path.endswith("/completions")}
    kept = {df["ticket"].iloc[i] for i, by in enumerate(report.answered_by) if by == "first"}
    assert not kept & asked


@needs_sklearn
def test_a_chat_provider_that_cannot_embed_is_refused_before_any_request(srv_anthropic: LLMServer) -> None:
    claude = ChatAgent(
        provider="anthropic", ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=srv_anthropic.anthropic_base_url
    )
    df, _ = tickets(300)
    with pytest.raises(ConfigError, match=r'^Cascade\(first="proxy"\) embeds the rows, and the anthropic provider '):
        df.aiforge.classify("{ticket}", labels=LABELS, agent=claude, cascade=Cascade(first="proxy"))
    assert srv_anthropic.request_count == 0


@pytest.fixture
def srv_anthropic() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


def test_without_scikit_learn_the_proxy_says_how_to_install_it_before_any_request() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["sklearn"] = None  # scikit-learn not installed: its import fails where aiforge makes it
        from aiforge import Cascade, ChatAgent, ConfigError
        from aiforge.providers.scripted import ScriptedProvider
        strong = ScriptedProvider(default="a")
        try:
            ChatAgent(provider=strong).run_batch(
                [f"row {i}" for i in range(300)], output=bool, max_batch=300, cascade=Cascade(first="proxy")
            )
        except ConfigError as error:
            print(f"{len(strong.calls)} {len(strong.embed_calls)} {error}")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    assert lines[0] == (
        '0 0 Cascade(first="proxy") trains scikit-learn\'s LogisticRegression, which is not installed: '
        'pip install "aiforge-kit[embeddings]"'
    )
