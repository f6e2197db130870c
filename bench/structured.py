"""Structured output over DataFrame rows: per-row overhead on the OpenAI wire, and the embedded model's quality.

Wire: the 60 reviews of ``tests/data/reviews.csv`` into a ``Review`` (sentiment, rating, topics),
against the fake OpenAI server (zero latency, so what is measured is each library's own time).
Every contender works at concurrency 10 and validates into the same pydantic model:

- baseline: raw ``AsyncOpenAI`` with a strict ``json_schema`` response format, ``model_validate_json``
  per row, ``asyncio.gather`` under a semaphore;
- aiforge: ``df.aiforge.map(prompt, output=Review, agent=agent, concurrency=10)``;
- instructor: ``AsyncInstructor.chat.completions.create(response_model=Review)`` per row (its
  documented default mode, a forced tool call), gathered under a semaphore (instructor has no batch);
- LangChain: ``ChatOpenAI(...).with_structured_output(Review).batch(prompts, max_concurrency=10)``.

Per-row overhead = (contender's wall time for the 60 rows - the baseline's, same round) / 60.

Embedded: the same 60 reviews and the 40 sentences of ``tests/data/people.csv`` through
``ChatAgent(provider="local")`` at temperature 0: share of rows that validate, accuracy per
field, rows per second.
"""

from __future__ import annotations

import asyncio
import csv
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench import peers
from bench.common import API_KEY, OPENAI_MODEL, Contender, Row, ServerProcess, Stat, error_rows, interleave

GROUP = "structured output"
DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
CONCURRENCY = 10
PROMPT = "Read this product review and give its sentiment, a 1-5 star rating and its topics.\n\nReview: {review}"


class Review(BaseModel):
    sentiment: Literal["pos", "neg", "neutral"]
    rating: int = Field(ge=1, le=5)
    topics: list[str]


class Person(BaseModel):
    name: str
    age: int
    city: str


def reviews() -> list[dict[str, str]]:
    with (DATA / "reviews.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def people() -> list[dict[str, str]]:
    with (DATA / "people.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _prompts(rows: list[dict[str, str]]) -> list[str]:
    return [PROMPT.format(review=r["review"]) for r in rows]


# ---------------------------------------------------------------------------
# Contenders on the wire
# ---------------------------------------------------------------------------


def raw_async(url: str, rows: list[dict[str, str]]) -> Any:
    import openai

    from aiforge.core.output import OutputSpec

    loop = peers.persistent_loop()
    client = openai.AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0)
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "Review", "strict": True, "schema": OutputSpec.of(Review).strict_schema()},
    }
    prompts = _prompts(rows)

    async def gather() -> list[Review]:
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(prompt: str) -> Review:
            async with limit:
                r = await client.chat.completions.create(
                    model=OPENAI_MODEL, messages=[{"role": "user", "content": prompt}], response_format=response_format
                )
                return Review.model_validate_json(r.choices[0].message.content or "")

        return await asyncio.gather(*(one(p) for p in prompts))

    return lambda: loop.run_until_complete(gather())


def aiforge_map(url: str, rows: list[dict[str, str]]) -> Any:
    import pandas as pd

    import aiforge  # noqa: F401 - registers the DataFrame accessor

    agent = peers.aiforge_agent(url, memory="none")
    df = pd.DataFrame(rows)

    def run() -> Any:
        out = df.aiforge.map(PROMPT, output=Review, agent=agent, concurrency=CONCURRENCY)
        failed = out.attrs["aiforge"].failed
        if failed:
            raise RuntimeError(f"{len(failed)} rows failed, e.g. {failed[0]!r}")
        return out

    return run


def instructor_async(url: str, rows: list[dict[str, str]]) -> Any:
    import instructor
    import openai

    loop = peers.persistent_loop()
    client = instructor.from_openai(openai.AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0))
    prompts = _prompts(rows)

    async def gather() -> list[Review]:
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(prompt: str) -> Review:
            async with limit:
                return await client.chat.completions.create(
                    model=OPENAI_MODEL, response_model=Review, messages=[{"role": "user", "content": prompt}]
                )

        return await asyncio.gather(*(one(p) for p in prompts))

    return lambda: loop.run_until_complete(gather())


def langchain_batch(url: str, rows: list[dict[str, str]]) -> Any:
    llm = peers.chat_openai(url).with_structured_output(Review)
    prompts = [[("human", p)] for p in _prompts(rows)]
    return lambda: llm.batch(prompts, config={"max_concurrency": CONCURRENCY})


def _has_all_rows(n: int) -> Any:
    return lambda result: len(result) == n


def wire_rows(quick: bool) -> list[Row]:
    rows = reviews()
    n = len(rows)
    with ServerProcess() as server:
        url = server.openai_base_url
        contenders = [Contender("raw async", raw_async(url, rows), check=_has_all_rows(n))]
        peers = (("aiforge", aiforge_map), ("instructor", instructor_async), ("langchain", langchain_batch))
        for name, factory in peers:
            try:
                contenders.append(Contender(name, factory(url, rows), check=_has_all_rows(n)))
            except Exception as exc:  # noqa: BLE001 - a contender that cannot be built is reported, not fatal
                from bench.common import failing

                contenders.append(Contender(name, failing(exc)))
        t = interleave(contenders, rounds=3 if quick else 10, calls=1, warmup=1 if quick else 2)
    per_row = {name: t.diff(name, "raw async") for name in ("aiforge", "instructor", "langchain") if t.ok(name)}
    label = f"per-row overhead over raw AsyncOpenAI + json_schema ({n} rows, concurrency {CONCURRENCY})"
    out: list[Row] = [
        Row(
            GROUP, f"raw AsyncOpenAI, {n} rows (baseline)",
            _per_row(t.stat("raw async"), n) if t.ok("raw async") else "n/a",
        )
    ]
    if "aiforge" not in per_row:
        error = f"error: {t.errors.get('aiforge', 'not measured')}"
        out.append(Row(GROUP, label, error, target="<= faster peer", passed=False))
    else:
        peers_measured = {k: v for k, v in per_row.items() if k != "aiforge"}
        best = min(peers_measured, key=lambda k: peers_measured[k].median) if peers_measured else None
        ours = per_row["aiforge"].median
        peer_text = ", ".join(f"{k}: {_per_row(v, n)}" for k, v in peers_measured.items())
        ratio = ours / peers_measured[best].median if best and peers_measured[best].median > 0 else None
        passed = ratio is not None and ratio <= 1.0
        out.append(Row(GROUP, label, _per_row(per_row["aiforge"], n), peer_text, ratio, "<= 1.00x faster peer", passed))
    out.extend(error_rows(t, GROUP))
    return out


def _per_row(stat: Stat, n: int) -> str:
    return Stat(stat.median / n, stat.p25 / n, stat.p75 / n, stat.n).fmt()


# ---------------------------------------------------------------------------
# The embedded model's quality
# ---------------------------------------------------------------------------


def embedded_rows(quick: bool) -> list[Row]:
    import pandas as pd

    from aiforge import ChatAgent

    agent = ChatAgent(provider="local", memory="none", TEMPERATURE=0.0, PROGRESS_BAR=False)
    review_df = pd.DataFrame(reviews())
    people_df = pd.DataFrame(people())
    if quick:
        review_df, people_df = review_df.head(6), people_df.head(4)
    rows: list[Row] = []

    t0 = time.perf_counter()
    out = review_df.aiforge.map(PROMPT, output=Review, agent=agent, concurrency=1)
    elapsed = time.perf_counter() - t0
    valid = int(out["sentiment"].notna().sum())
    n = len(review_df)
    sentiment = (out["sentiment"].astype("string") == review_df["sentiment"]).mean()
    rating = (out["rating"] == review_df["rating"].astype(int)).mean()
    near = ((out["rating"] - review_df["rating"].astype(int)).abs() <= 1).mean()
    rows.append(
        Row(
            GROUP,
            f"embedded: reviews -> Review, rows that validate ({n} rows)",
            f"{valid}/{n} = {valid / n:.0%}",
            f"{n / elapsed:.2f} rows/s",
            valid / n,
            "= 100 %",
            valid == n,
        )
    )
    rows.append(
        Row(GROUP, "embedded: reviews accuracy (sentiment / rating exact / rating within 1)",
            f"{sentiment:.0%} / {rating:.0%} / {near:.0%}")
    )

    t0 = time.perf_counter()
    extracted = people_df.aiforge.extract("sentence", output=Person, agent=agent, concurrency=1)
    elapsed = time.perf_counter() - t0
    m = len(people_df)
    valid = int(extracted["name"].notna().sum())
    name = (extracted["name"].astype("string").str.strip() == people_df["name"]).mean()
    age = (extracted["age"] == people_df["age"].astype(int)).mean()
    city = (extracted["city"].astype("string").str.strip() == people_df["city"]).mean()
    rows.append(
        Row(
            GROUP,
            f"embedded: sentences -> Person, rows that validate ({m} rows)",
            f"{valid}/{m} = {valid / m:.0%}",
            f"{m / elapsed:.2f} rows/s",
            valid / m,
            "= 100 %",
            valid == m,
        )
    )
    rows.append(Row(GROUP, "embedded: people accuracy (name / age / city)", f"{name:.0%} / {age:.0%} / {city:.0%}"))
    return rows


def run(quick: bool) -> list[Row]:
    return [*wire_rows(quick), *embedded_rows(quick)]
