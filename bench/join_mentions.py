"""Semantic group: join's one multiple-choice question per left row against a yes/no per pair (issue 32, item 3).

The set (``mention_set``): 200 customer mentions x 40 products (``semantic_join.products``: a brand and a kind,
every brand in two products, every kind in four). A mention names its product in paraphrase: the kind by another
word ("water boiler" for a kettle, "hoover" for a vacuum), the brand in any case and at times misspelt, in one of
several sentence shapes; one mention in ten names no product, one in twenty names two. The judge is perfect: it
answers every question from the planted truth (``semantic_join.truth_answer``), so precision is 1.0 by construction
and what is measured is the requests each strategy makes and the recall its candidate lists allow (a match the
embeddings do not rank within the depth is never asked about).

Rows (``mention_rows``), on all-MiniLM-L6-v2 vectors (``EMBEDDING_PROVIDER="sentence-transformers"``, skipped when
the ``[embeddings]`` extra or the weights are missing) and on the scripted provider's hashed word vectors:
``strategy="pairs", candidates=5`` (the old form: a yes/no per candidate pair) and ``strategy="candidates"`` with
``candidates="auto"`` (the new default above ``CLASSIFY_MAX_RIGHT``). Requests are the scripted provider's own
chat calls plus the embeddings' requests. Target (issue 32): <= 250 requests at recall >= 0.95 with MiniLM.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.common import Row
from bench.semantic_join import PROMPT, products, scores, scripted_reply, truth_answer

if TYPE_CHECKING:
    import pandas as pd

GROUP = "semantic"
KIND_WORDS = {
    "kettle": ["water boiler", "electric kettle", "tea kettle"],
    "blender": ["smoothie maker", "food blender", "mixer jug"],
    "toaster": ["bread toaster", "toast machine", "two-slice toaster"],
    "headphones": ["headset", "earphones", "over-ear cans"],
    "charger": ["power adapter", "charging brick", "phone charger"],
    "backpack": ["rucksack", "daypack", "laptop bag"],
    "lamp": ["desk light", "reading light", "bedside lamp"],
    "vacuum": ["hoover", "vacuum cleaner", "stick vac"],
    "grinder": ["coffee mill", "bean grinder", "spice mill"],
    "keyboard": ["mechanical keys", "wireless keyboard", "typing board"],
}
_ONE = [
    "my {brand} {kind} stopped working after {days} days",
    "the {kind} I bought, a {brand}, arrived with a cracked case",
    "{brand} support: the {kind} makes a rattling noise",
    "is the {kind} made by {brand} covered by the warranty?",
    "sending back a {kind} ({brand}), it smells of burnt plastic",
    "got a {brand} {kind} as a present and it will not turn on",
]
_TWO = "ordered the {brand} {kind} and a {brand2} {kind2}, both came damaged"
_NONE = ["where is the invoice for order {order}?", "I cannot log in to my account", "please change my address"]


def _brand(name: str, rng: random.Random) -> str:
    """The brand as a customer writes it: as is, lower case, upper case, or with a letter dropped."""
    pick = rng.random()
    if pick < 0.2:
        cut = rng.randrange(1, len(name) - 1)
        return (name[:cut] + name[cut + 1 :]).lower()
    return name.lower() if pick < 0.6 else name.upper() if pick < 0.7 else name


def mention_set(mentions: int = 200, catalogue: int = 40, seed: int = 32) -> tuple[pd.DataFrame, pd.DataFrame, set]:
    """Mentions, products and the true (mention id, product id) pairs (module docstring)."""
    import pandas as pd

    rng = random.Random(seed)
    right = products(catalogue)
    texts, truth = [], set()
    for m in range(mentions):
        mid = f"M{m:03d}"
        if m % 10 == 9:
            texts.append(f"{rng.choice(_NONE).format(order=10_000 + m)} (#{m})")
            continue
        chosen = rng.sample(list(right.index), 2 if m % 20 == 4 else 1)
        words = []
        for product in chosen:
            brand, kind = right.loc[product, "name"].split()
            words.append((_brand(brand, rng), rng.choice(KIND_WORDS[kind])))
            truth.add((mid, product))
        if len(words) == 2:
            text = _TWO.format(brand=words[0][0], kind=words[0][1], brand2=words[1][0], kind2=words[1][1])
        else:
            text = rng.choice(_ONE).format(brand=words[0][0], kind=words[0][1], days=rng.randint(2, 30))
        texts.append(f"{text} (#{m})")
    left = pd.DataFrame({"text": texts}, index=pd.Index([f"M{m:03d}" for m in range(mentions)], name="mention_id"))
    return left, right, truth


def _vector_setups() -> list[tuple[str, dict[str, Any]]]:
    from aiforge.providers.sentence_vectors import bundled_model_zip, sentence_transformers_installed

    setups: list[tuple[str, dict[str, Any]]] = []
    if sentence_transformers_installed() and bundled_model_zip() is not None:
        setups.append(("MiniLM", {"EMBEDDING_PROVIDER": "sentence-transformers"}))
    setups.append(("scripted hashed words", {}))
    return setups


def measured(
    left: pd.DataFrame, right: pd.DataFrame, truth: set, settings: dict[str, Any], **join: Any
) -> tuple[Any, int, float, float, float]:
    """One join by a perfect judge: its report, the requests (chat calls + embedding requests), recall,
    precision and seconds."""
    import warnings

    from aiforge import ChatAgent
    from aiforge.providers.scripted import ScriptedProvider

    provider = ScriptedProvider(default=scripted_reply(truth_answer(left, right, truth)))
    agent = ChatAgent(provider=provider, memory="none", output_retries=0, PROGRESS_BAR=False, **settings)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joined = left.aiforge.join(right, PROMPT, agent=agent, concurrency=8, **join)
    seconds = time.perf_counter() - started
    report = joined.attrs["aiforge"]
    recall, precision = scores(joined, truth)
    return report, len(provider.calls) + report.embedding_requests, recall, precision, seconds


def mention_rows(quick: bool) -> list[Row]:
    """Old (a yes/no per candidate pair, k=5) against new (one multiple choice per mention, depth "auto")."""
    left, right, truth = mention_set()
    rows = []
    for vectors, settings in _vector_setups():
        old, old_requests, old_recall, old_precision, _ = measured(
            left, right, truth, settings, strategy="pairs", candidates=5
        )
        new, requests, recall, precision, seconds = measured(left, right, truth, settings)
        target = vectors == "MiniLM"
        rows.append(
            Row(
                GROUP,
                f"join {len(left)} mentions x {len(right)} products, one question per mention ({vectors} vectors)",
                f"{requests} requests ({new.chat_requests} chat + {new.embedding_requests} embeddings), "
                f"recall {recall:.1%}, precision {precision:.1%}",
                f"pairs k=5: {old_requests} requests, recall {old_recall:.1%}, precision {old_precision:.1%}",
                old_requests / requests,
                "<= 250 requests, recall >= 95%" if target else "",
                (requests <= 250 and recall >= 0.95) if target else None,
                note=f"perfect judge (answers from the planted truth); depth {new.k} chosen: {new.depth_how}; "
                f"estimated recall {_share(new.estimated_recall)} (95% interval {_interval(new.recall_interval)}), "
                f"{new.sample_questions} sample questions of {new.questions}, their answers kept; "
                f"{new.total_tokens - new.embedding_tokens} chat tokens, the sample's included (pairs k=5: "
                f"{old.total_tokens - old.embedding_tokens}); {seconds:.1f} s",
            )
        )
    return rows


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _interval(bounds: tuple[float, float] | None) -> str:
    return "n/a" if bounds is None else f"{bounds[0]:.2f}-{bounds[1]:.2f}"


MEASURES: list[Callable[[bool], list[Row]]] = [mention_rows]

if __name__ == "__main__":
    for row in mention_rows(quick=False):
        print(row.benchmark, "|", row.aiforge, "|", row.peer, "|", row.verdict, "|", row.note)
