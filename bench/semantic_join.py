"""Semantic group: ``left.aiforge.join(right, ...)`` on a synthetic set with known matches (issue 25).

The set (``join_set``): support tickets and a product catalogue. A product is a brand and a kind ("Velora
kettle"); a ticket names its product in paraphrase ("my kettle from velora leaks since monday", "the VELORA one,
a kettle, ..."), and one ticket in ten concerns no product at all (an invoice, a login). Every brand and every kind
appears in many products, so only the pair of words tells the product apart. The model is scripted to answer from
the known truth (``truth_answer``): what is measured is how many questions and requests each strategy asks and
whether the pairs it never asks lose matches (the candidates' recall is the embedding blocking's), not a model's
judgement.

Measures (``join_rows``): 200 tickets x 200 products with ``strategy="pairs"`` (a yes/no per candidate pair) at
k = 3, 5 and 10 and with ``strategy="candidates"`` (one multiple choice per ticket, its depth "auto"), requests
(chat + embedding) against the 40 000 questions of asking every pair, recall and precision; and 200 tickets x 20
products with ``strategy="classify"`` (one question per distinct ticket) against 4 000 pairs. Run through the real
openai SDK against the in-process fake server (``fakellm``), whose own request log is what is counted; its
embeddings are deterministic hashed word and trigram vectors, so texts that share words are near. ``quick``: 60
tickets instead of 200.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.common import API_KEY, OPENAI_MODEL, Row

if TYPE_CHECKING:
    import pandas as pd

GROUP = "semantic"
PROMPT = "Does the ticket {left.text} concern the product {right.name}?"
BRANDS = ["Velora", "Quibbix", "Torvane", "Nembra", "Ostrik", "Palumo", "Zendari", "Corvex", "Miravel", "Lumetta",
          "Brastow", "Kelvane", "Drumlin", "Faroque", "Gestalo", "Hyrdel", "Ivoria", "Jastrel", "Marquon", "Sobrine"]
KINDS = ["kettle", "blender", "toaster", "headphones", "charger", "backpack", "lamp", "vacuum", "grinder", "keyboard"]
_WITH_PRODUCT = [
    "my {kind} from {brand} stopped working after {days} days",
    "the {BRAND} one, a {kind}, arrived with a cracked lid (order {order})",
    "is there a warranty on a {brand} {kind}? mine makes a grinding noise",
    "bought a {kind} ({brand}) {days} days ago and it will not switch on",
    "{brand}: the {kind} I got as a gift smells of burnt plastic",
]
_WITHOUT_PRODUCT = [
    "where is the invoice for order {order}?",
    "I cannot log in to my account since {days} days",
    "please change the delivery address of order {order}",
]
_PAIR = re.compile(r"^Does the ticket (?P<ticket>.*) concern the product (?P<product>.*)\?$", re.S)
_ITEM = re.compile(r"^(\d+)\. name: (.*)$", re.M)


def products(count: int) -> pd.DataFrame:
    """``count`` products (at most 200): every (brand, kind) pair once, brands and kinds shared among them."""
    import pandas as pd

    names = []
    for p in range(count):
        brand, cycle = p % len(BRANDS), p // len(BRANDS)
        names.append(f"{BRANDS[brand]} {KINDS[(cycle + brand) % len(KINDS)]}")
    return pd.DataFrame({"name": names, "price": [9.0 + p for p in range(count)]},
                        index=pd.Index([f"P{p:03d}" for p in range(count)], name="product_id"))


def join_set(tickets: int, catalogue: int, seed: int = 25) -> tuple[pd.DataFrame, pd.DataFrame, set[tuple[str, str]]]:
    """Tickets, products, and the true (ticket id, product id) pairs: ticket t concerns one product, or none."""
    import pandas as pd

    rng = random.Random(seed)
    right = products(catalogue)
    texts, truth = [], set()
    for t in range(tickets):
        fill = {"days": rng.randint(2, 30), "order": 10_000 + t}
        if t % 10 == 9:
            texts.append(f"{rng.choice(_WITHOUT_PRODUCT).format(**fill)} (ticket {t})")
            continue
        product = right.index[(7 * t) % catalogue]
        brand, kind = right.loc[product, "name"].split()
        text = rng.choice(_WITH_PRODUCT).format(brand=brand.lower(), BRAND=brand.upper(), kind=kind, **fill)
        texts.append(f"{text} (ticket {t})")
        truth.add((f"T{t:03d}", product))
    left = pd.DataFrame({"text": texts, "price": [0.0] * tickets},
                        index=pd.Index([f"T{t:03d}" for t in range(tickets)], name="ticket_id"))
    return left, right, truth


def truth_answer(left: pd.DataFrame, right: pd.DataFrame, truth: set[tuple[str, str]]) -> Callable[[str], Any]:
    """The model that knows the truth (a perfect judge): a pair question -> bool, a classification or a
    multiple choice over candidates -> the listed items' numbers."""
    products_of: dict[str, set[str]] = {}
    for t, p in truth:
        products_of.setdefault(left.loc[t, "text"], set()).add(right.loc[p, "name"])

    def answer(question: str) -> Any:
        pair = _PAIR.match(question)
        if pair is not None:
            return pair["product"] in products_of.get(pair["ticket"], set())
        first, _, items = question.partition("\n")
        asked = _PAIR.match(first)
        assert asked is not None, f"not a join question: {question[:80]!r}"
        chosen = [n for n, name in _ITEM.findall(items) if name in products_of.get(asked["ticket"], set())]
        if "Reply with the numbers" in items:
            return chosen
        if "Reply with a list" in items:  # the candidates' single choice: a list of at most one number
            return chosen[:1]
        return chosen[0] if chosen else "none"

    return answer


def scripted_reply(answer: Callable[[str], Any]) -> Callable[[list[dict[str, Any]]], str]:
    """``answer`` as a scripted provider's default: the JSON of the answer to the last user message."""

    def reply(messages: list[dict[str, Any]]) -> str:
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        return json.dumps({"value": answer(question)})

    return reply


def scores(joined: pd.DataFrame, truth: set[tuple[str, str]]) -> tuple[float, float]:
    """Recall and precision of the joined pairs against ``truth``."""
    found = {pair for pair in joined.index if pair[1] is not None}
    hits = len(found & truth)
    return hits / len(truth), hits / len(found) if found else 1.0


CANDIDATE_KS = (3, 5, 10)
CLASSIFY_CATALOGUE = 20


def join_rows(quick: bool) -> list[Row]:
    """Requests and recall/precision of both strategies, counted by the fake server behind the real openai SDK."""
    tickets, catalogue = (60, 60) if quick else (200, 200)
    left, right, truth = join_set(tickets, catalogue)
    rows = [_measured(left, right, truth, "pairs", k) for k in CANDIDATE_KS]
    rows.append(_measured(left, right, truth, "candidates", None))
    left, right, truth = join_set(tickets, CLASSIFY_CATALOGUE)
    rows.append(_measured(left, right, truth, "classify", None))
    return rows


def _measured(left: pd.DataFrame, right: pd.DataFrame, truth: set[tuple[str, str]], strategy: str,
              k: int | None) -> Row:
    from aiforge import ChatAgent
    from fakellm import LLMServer, Reply

    answer = truth_answer(left, right, truth)
    with LLMServer(strict=True, default=lambda request: Reply(output={"value": answer(request.last_user_text)})) as srv:
        agent = ChatAgent(provider="openai", OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=srv.openai_base_url,
                          MODEL=OPENAI_MODEL, MAX_RETRIES=0, memory="none", PROGRESS_BAR=False)
        depth = k or "auto"
        joined = left.aiforge.join(right, PROMPT, agent=agent, strategy=strategy, candidates=depth, concurrency=16)
        embedding = sum(request.path.endswith("/embeddings") for request in srv.requests)
        chat = srv.request_count - embedding
    report = joined.attrs["aiforge"]
    recall, precision = scores(joined, truth)
    naive = len(left) * len(right)
    requests = chat + embedding
    bound = len(left) * (k or 1) + embedding
    tokens = report.batch.total_tokens if report.batch is not None else 0
    if strategy == "candidates":
        bound = len(left) + embedding
        name = "candidates, one multiple choice per ticket, depth auto"
        note = (f"{report.questions} questions ({report.sample_questions} of them the sample at depth {report.k_max}, "
                f"answers kept), depth {report.k} chosen ({report.depth_how}), "
                f"{report.total_tokens - report.embedding_tokens} chat tokens (in and out, the sample's included); "
                "the model answers from the truth")
    elif k is not None:
        name = f"pairs k={k}"
        note = (f"{report.questions} distinct pair questions, {tokens} chat tokens (in and out; asking all {naive} "
                f"pairs alike would take ~{tokens * naive // max(report.questions, 1)}), {report.embedding_tokens} "
                "embedding tokens. The model answers from the truth, so a missed match is one the embedding blocking "
                "did not propose (fakellm's 1536-d hashed vectors; on the 200 x 200 set the scripted provider's "
                "256-d ones miss 1 of 180 at k=3)")
    else:
        name = "classify rewrite"
        note = (f"one question per distinct ticket listing the {len(right)} products, {tokens} chat tokens (in and "
                "out); the model answers from the truth")
    return Row(
        GROUP, f"join {len(left)} x {len(right)}, {name}: requests, recall, precision",
        f"{requests} requests ({chat} chat + {embedding} embeddings), recall {recall:.1%}, precision {precision:.1%}",
        f"{naive} requests (one per pair)", naive / requests, f"<= {bound} requests, precision 100%",
        requests <= bound and precision == 1.0, note=note,
    )
