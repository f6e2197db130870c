"""Semantic group measures: ``dedup`` on planted near-duplicates (issue 25).

``dedup_rows``: 2 000 support tickets, of which 400 are rewordings of 250 others (a word dropped or swapped for a
synonym, a greeting or "please" added, a typo, the case and punctuation changed; 1-3 edits each), among distinct
tickets built from the same templates (so they share most of their words with each other: hard negatives). The
embeddings are the scripted provider's (hashed words and trigrams, what the tests use), in process; a real
embeddings model would move the similarities, not the counting. Measured:

- precision and recall of the duplicate *pairs* (two rows in one predicted group vs the same planted ticket) at
  several thresholds, without confirmation (groups never chain: each row is a duplicate of its group's first row);
- with ``confirm=(0.75, 0.9)`` and a model that answers right (a scripted oracle that knows the planted tickets):
  the requests made against asking the model about every pair, n(n-1)/2, and the precision/recall it gets to;
- the blocking alone on 50 000 rows (10 000 in ``--quick``) of 256-dimension vectors: wall time and the peak memory
  Python allocates (tracemalloc), against the 10 GB an n x n float32 matrix would take.
"""

from __future__ import annotations

import random
import time
from itertools import combinations
from typing import Any

from bench.common import Row

GROUP = "semantic"
ROWS = 2000
ORIGINALS = 250
REWORDINGS = 400
THRESHOLDS = (0.8, 0.85, 0.9, 0.95)
BAND = (0.75, 0.9)

PRODUCTS = [
    "mobile app", "web dashboard", "billing page", "invoice", "subscription", "password reset email", "export",
    "CSV import", "team workspace", "API key", "webhook", "calendar sync", "mobile login", "dark mode", "report",
    "search page", "notification email", "receipt", "refund", "annual plan", "two-factor code", "profile photo",
    "shared folder", "audit log", "SSO login", "payment card", "trial", "data backup", "user invite", "chat widget",
]
PROBLEMS = [
    "does not load after {event}", "shows the wrong {field} since {event}", "was charged twice on {date}",
    "keeps failing with error {code}", "is missing since {event}", "cannot be changed from the settings page",
    "is very slow since {event}", "sends duplicate messages since {date}", "crashes when I open it on {device}",
    "is rejected with error {code} on {device}",
]
EVENTS = ["the last update", "the migration", "my plan change", "the outage", "I switched browsers", "the holidays"]
FIELDS = ["time zone", "currency", "name", "amount", "language", "date format"]
DEVICES = ["my iPhone", "Android", "Safari", "Firefox", "Windows", "my iPad"]
OPENERS = ["", "Hello, ", "Hi team, ", "Urgent: ", "Question: ", "Help: "]
CONTEXTS = [
    "Account {number}, {name} on the {plan} plan.", "Order {number} shipped to {city}.",
    "Workspace {team}, reference {number}.", "I am {name} from {city}, customer {number}.",
    "Ticket {number} was closed without an answer.", "Our {team} team in {city} is affected.",
]
NAMES = ["Ada", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas", "Kofi", "Lena", "Mateo",
         "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen", "Yara", "Zeno"]
CITIES = ["Lyon", "Porto", "Oslo", "Austin", "Nairobi", "Osaka", "Quito", "Gdansk", "Perth", "Leeds", "Tunis", "Pune"]
TEAMS = ["finance", "support", "marketing", "design", "sales", "research", "legal", "ops"]
PLANS = ["Free", "Pro", "Business", "Enterprise"]
SYNONYMS = {
    "does not": "doesn't", "cannot": "can't", "email": "e-mail", "twice": "two times", "wrong": "incorrect",
    "very slow": "really slow", "crashes": "crashes every time", "keeps failing": "fails again and again",
    "missing": "gone", "settings page": "settings screen", "shows": "is showing", "since": "ever since",
}
POLITE = ["please help", "thanks in advance", "any idea?", "please advise", "this is blocking us"]


def planted_tickets(seed: int = 25) -> tuple[list[str], list[int]]:
    """``ROWS`` ticket texts and each one's planted ticket number (rewordings share their original's), shuffled."""
    rng = random.Random(seed)
    originals: list[str] = []
    seen: set[str] = set()
    while len(originals) < ROWS - REWORDINGS:
        text = OPENERS[rng.randrange(len(OPENERS))] + _ticket(rng)
        if text not in seen:
            seen.add(text)
            originals.append(text)
    rows = [(text, number) for number, text in enumerate(originals)]
    for _ in range(REWORDINGS):
        number = rng.randrange(ORIGINALS)
        rows.append((_reworded(originals[number], rng), number))
    rng.shuffle(rows)
    return [text for text, _ in rows], [number for _, number in rows]


def _ticket(rng: random.Random) -> str:
    problem = PROBLEMS[rng.randrange(len(PROBLEMS))].format(
        event=rng.choice(EVENTS), field=rng.choice(FIELDS), device=rng.choice(DEVICES),
        date=f"{rng.choice(['March', 'April', 'May', 'June'])} {rng.randint(1, 28)}", code=rng.randint(400, 599),
    )
    context = rng.choice(CONTEXTS).format(
        number=rng.randint(10_000, 99_999), name=rng.choice(NAMES), plan=rng.choice(PLANS), city=rng.choice(CITIES),
        team=rng.choice(TEAMS),
    )
    return f"My {rng.choice(PRODUCTS)} {problem}. {context}"


def _reworded(text: str, rng: random.Random) -> str:
    edits = [_synonym, _polite, _typo, _dropped, _cased]
    for edit in rng.sample(edits, rng.randint(1, 3)):
        text = edit(text, rng)
    return text


def _synonym(text: str, rng: random.Random) -> str:
    found = [phrase for phrase in SYNONYMS if phrase in text]
    return text.replace(choice := rng.choice(found), SYNONYMS[choice], 1) if found else text + " Thanks."


def _polite(text: str, rng: random.Random) -> str:
    return f"{text} {rng.choice(POLITE).capitalize()}."


def _typo(text: str, rng: random.Random) -> str:
    words = text.split()
    long = [i for i, word in enumerate(words) if len(word) > 4 and word.isalpha()]
    if not long:
        return text
    i = rng.choice(long)
    k = rng.randrange(1, len(words[i]) - 2)
    word = words[i]
    words[i] = word[:k] + word[k + 1] + word[k] + word[k + 2 :]
    return " ".join(words)


def _dropped(text: str, rng: random.Random) -> str:
    words = text.split()
    for filler in ("My", "very", "the", "I"):
        if filler in words:
            words.remove(filler)
            return " ".join(words)
    return text


def _cased(text: str, rng: random.Random) -> str:
    return text.lower().rstrip(".") if rng.random() < 0.5 else text.rstrip(".") + "!!"


def _pairs_of(groups: list[Any]) -> set[tuple[int, int]]:
    """The pairs of rows that ``groups`` (one group key per row) put together."""
    members: dict[Any, list[int]] = {}
    for row, group in enumerate(groups):
        members.setdefault(group, []).append(row)
    return {pair for rows in members.values() for pair in combinations(rows, 2)}


def _scores(found: set[tuple[int, int]], truth: set[tuple[int, int]]) -> tuple[float, float]:
    hits = len(found & truth)
    return (hits / len(found) if found else 1.0), hits / len(truth)


def dedup_rows(quick: bool) -> list[Row]:
    """Precision/recall of ``dedup`` at several thresholds, and the requests ``confirm`` makes (module note)."""
    import pandas as pd

    from aiforge import ChatAgent
    from aiforge.providers.scripted import ScriptedProvider

    texts, numbers = planted_tickets()
    frame = pd.DataFrame({"ticket": texts})
    truth = _pairs_of(numbers)
    ticket_of = dict(zip(texts, numbers, strict=True))

    def oracle(messages: list[Any]) -> str:
        asked = messages[-1]["content"]
        left, right = (part.split("\n\n")[0] for part in asked.split("text:\n")[1:3])
        return "true" if ticket_of[left] == ticket_of[right] else "false"

    rows: list[Row] = []
    all_pairs = len(texts) * (len(texts) - 1) // 2
    for threshold in THRESHOLDS:
        ids = frame.aiforge.dedup("ticket", threshold, agent=ChatAgent(provider="scripted", PROGRESS_BAR=False))
        precision, recall = _scores(_pairs_of(ids.tolist()), truth)
        rows.append(Row(
            GROUP, f"dedup {len(texts)} tickets, threshold {threshold}", f"precision {precision:.1%}, recall "
            f"{recall:.1%}", "", None, "", None,
            note=f"{len(truth)} planted duplicate pairs ({REWORDINGS} rewordings of {ORIGINALS} tickets); scripted "
            "embeddings (hashed words and trigrams), no model requests",
        ))
    agent = ChatAgent(provider=ScriptedProvider(default=oracle), output_retries=0, PROGRESS_BAR=False)
    started = time.perf_counter()
    ids = frame.aiforge.dedup("ticket", confirm=BAND, agent=agent, concurrency=16)
    seconds = time.perf_counter() - started
    report = ids.attrs["aiforge"]
    precision, recall = _scores(_pairs_of(ids.tolist()), truth)
    requests = len(agent.provider.calls)
    rows.append(Row(
        GROUP, f"dedup {len(texts)} tickets, confirm={BAND}: model requests vs every pair",
        f"{requests} requests; precision {precision:.1%}, recall {recall:.1%}", f"{all_pairs} requests (n(n-1)/2)",
        all_pairs / max(requests, 1), "", None,
        note=f"{report.similar} texts >= {BAND[1]} with their group's first text taken on similarity, "
        f"{report.borderline} pairs of first texts in the band, {report.asked} asked (those of a text no other had "
        "joined); the model is a scripted oracle, so precision/recall show what blocking lets a right model reach; "
        f"{seconds:.1f} s in process",
    ))
    rows.append(_blocking_row(10_000 if quick else 50_000))
    return rows


def _blocking_row(count: int) -> Row:
    """Wall time and peak traced memory of the tiled blocking alone on ``count`` random 256-d vectors."""
    import tracemalloc

    import numpy as np

    from aiforge.semantic.near_duplicates import Band, group_texts
    from aiforge.semantic.similarity import BLOCK_ROWS

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(count, 256)).astype(np.float32)
    vectors[1::50] = vectors[::50][: len(vectors[1::50])] + 0.05 * rng.normal(size=(len(vectors[1::50]), 256))
    texts = [str(n) for n in range(count)]
    tracemalloc.start()
    started = time.perf_counter()
    roots, report = group_texts(texts, vectors, Band(0.9, 0.9))
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    full = count * count * 4 / 1e9
    return Row(
        GROUP, f"dedup blocking, {count} rows x 256 dims", f"{seconds:.1f} s, peak {peak / 1e6:.0f} MB",
        f"{full:.1f} GB for the n x n float32 matrix", None, "", None,
        note=f"tiles of {BLOCK_ROWS} x {BLOCK_ROWS}; {report.similar} planted near-copies grouped of "
        f"{len(vectors[1::50])}; "
        "the vectors themselves (numpy, traced) included in the peak",
    )


EMBEDDED_THRESHOLDS = (0.95, 0.98)


def dedup_embedded_rows(quick: bool) -> list[Row]:
    """Precision/recall of ``dedup`` on the same 2 000 tickets with the embedded model's embeddings (SmolLM2-135M,
    mean-pooled by llama.cpp). Skipped by ``--quick``: embedding 2 000 texts takes minutes on a laptop core."""
    if quick:
        return []
    import pandas as pd

    from aiforge import ChatAgent

    texts, numbers = planted_tickets()
    frame = pd.DataFrame({"ticket": texts})
    truth = _pairs_of(numbers)
    agent = ChatAgent(provider="local", PROGRESS_BAR=False)
    started = time.perf_counter()
    ids = frame.aiforge.dedup("ticket", EMBEDDED_THRESHOLDS[0], agent=agent, cache="memory")
    seconds = time.perf_counter() - started
    rows = []
    for threshold in EMBEDDED_THRESHOLDS:
        if threshold != EMBEDDED_THRESHOLDS[0]:  # the texts again, from the cache: only the blocking runs
            ids = frame.aiforge.dedup("ticket", threshold, agent=agent, cache="memory")
        precision, recall = _scores(_pairs_of(ids.tolist()), truth)
        rows.append(Row(
            GROUP, f"dedup {len(texts)} tickets, embedded SmolLM2 embeddings, threshold {threshold}",
            f"precision {precision:.1%}, recall {recall:.1%}", "", None, "", None,
            note=f"embedding the {len(texts)} texts took {seconds:.0f} s; this small chat model's mean-pooled vectors "
            "put nearly every pair of these templated tickets above 0.9, so a threshold cannot tell a rewording from "
            "another ticket: use an embeddings model (EMBEDDING_MODEL, a server's /v1/embeddings) for dedup",
        ))
    return rows
