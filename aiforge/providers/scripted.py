"""A deterministic in-process provider for tests, docs and tutorials.

Queue replies with ``enqueue``; every call is recorded in ``calls``::

    fake = ScriptedProvider(["Paris is the capital of France."])
    fake.enqueue(tool_call("weather", city="NYC"), "It is sunny in NYC.")
    agent = ChatAgent(provider=fake)

With an empty queue it answers ``default`` (a string, or a function of the messages), which by
default echoes the last user message. Your functions (``default``, a queued one, ``scores=``, ``embeddings=``)
run in a worker thread, so a slow one never holds up the event loop and an interrupt stops the call at
once (its late answer is dropped); in a batch with ``concurrency`` above 1 they may run at the same time.
Structured answers are scripted as values and refusals as their explanation; a text reply stays as written
also when ``params.output`` is set, so a test can script invalid JSON::

    fake.enqueue(structured(Review(sentiment="pos", rating=5)), "not json", refusal("I can't."))
    assert fake.calls[0].params.output is OutputSpec.of(Review)

``fake.batches`` drives its in-process Batch API (``agent.submit_batch``; see ``scripted_batch``).

``score_labels`` (a cascade's cheap pass) gives the next scripted reply's answer the probability ``confidence``
and shares the rest among the other labels; ``scores=`` (a function of the messages returning ``{label: weight}``
or one label, which then gets ``confidence``) scripts each row's confidence::

    cheap = ScriptedProvider(scores=lambda messages: {"pos": 0.97, "neg": 0.03})

``embed`` gives each text a deterministic unit vector in which texts sharing words are close (``scripted_embeddings``:
hashed words and trigrams, ``embedding_dim`` long); ``embeddings=`` (a function of one text returning its vector)
scripts them instead, and may raise to script a failure. Every ``embed`` call's texts are kept in ``embed_calls``::

    fake = ScriptedProvider(embeddings=lambda text: [1.0, 0.0] if "cat" in text else [0.0, 1.0])

``classifies_by_scoring=True`` makes label batches (``classify``, ``filter``) score rather than generate, as the
embedded model's do (``LABELS_BY``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from aiforge.core.file_inputs import FileRules
from aiforge.core.tokens import CHARS_PER_TOKEN
from aiforge.core.types import (
    CallParams,
    Completion,
    EmbeddingLimits,
    Embeddings,
    LabelScores,
    Message,
    ToolSpec,
    Usage,
    UsageError,
)
from aiforge.providers.base import Provider, StreamEvent, StructuredOutputMode
from aiforge.providers.batch_api import BatchLimits
from aiforge.providers.scripted_batch import ScriptedBatchAPI, ScriptedBatches
from aiforge.providers.scripted_embeddings import SCRIPTED_DIM, hashed_embedding
from aiforge.providers.scripted_replies import ScriptedCall as ScriptedCall
from aiforge.providers.scripted_replies import ScriptedReply as ScriptedReply
from aiforge.providers.scripted_replies import refusal as refusal
from aiforge.providers.scripted_replies import structured as structured
from aiforge.providers.scripted_replies import tool_call as tool_call
from aiforge.providers.scripted_replies import tool_calls as tool_calls

_instance_ids = itertools.count(1)


Script = str | ScriptedReply | BaseException | Callable[[list[Message]], "str | ScriptedReply"]
EmbeddingScript = Callable[[str], Sequence[float]]
"""``embeddings=``: one text -> its vector (every text's of the same length)."""
LabelScript = Callable[[list[Message]], "Mapping[str, float] | str"]
"""``scores=``: the messages of one request -> each label's weight (normalised), or the one likely label."""


def _echo(messages: list[Message]) -> str:
    last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return f"You said: {last}"


def _count_tokens(text: str) -> int:
    # Floor + 1 (the fake server's count), not estimate_tokens' ceiling: a text of 4 characters is 2 tokens here.
    return len(text) // CHARS_PER_TOKEN + 1 if text else 0


class ScriptedProvider(Provider):
    """Replies from a script, deterministically; records every call."""

    name: ClassVar[str] = "scripted"
    supports_native_tools = True
    supports_streaming: ClassVar[bool] = True
    free = True
    structured_output: ClassVar[StructuredOutputMode] = "scripted"
    scores_labels: ClassVar[bool] = True
    embeds: ClassVar[bool] = True
    default_embedding_model: ClassVar[str | None] = "scripted-embedding"
    file_rules: FileRules | None = "openai"  # reads none (text path); FILE_INPUT="native" sends markers

    def __init__(
        self,
        replies: Iterable[Script] | Any = (),
        *,
        default: str | Callable[[list[Message]], str | ScriptedReply] = _echo,
        model: str = "scripted-model",
        chunk_size: int = 2,
        delay: float = 0.0,
        scores: LabelScript | None = None,
        confidence: float = 0.9,
        classifies_by_scoring: bool = False,
        embeddings: EmbeddingScript | None = None,
        embedding_dim: int = SCRIPTED_DIM,
        embedding_limits: EmbeddingLimits | None = None,
    ) -> None:
        # Built by the registry as ScriptedProvider(settings): a settings object is not a script.
        if isinstance(replies, str):
            replies = (replies,)
        elif not isinstance(replies, Iterable) or hasattr(type(replies), "model_fields"):
            replies = ()
        self._queue: deque[Script] = deque(replies)
        self.default = default
        self.default_model = model
        self.chunk_size = chunk_size
        self.delay = delay
        self.scores = scores
        """How ``score_labels`` scores a request; None: the next scripted reply's answer gets ``confidence``."""
        self.confidence = confidence
        """The probability ``score_labels`` gives a request's one likely label (the rest is shared evenly)."""
        self.classifies_by_scoring = classifies_by_scoring
        """True: label batches are answered by ``score_labels`` (``LABELS_BY=auto``), as on the embedded model."""
        self.embeddings = embeddings
        """How ``embed`` makes a text's vector; None: hashed words and trigrams (``scripted_embeddings``)."""
        self.embedding_dim = embedding_dim
        if embedding_limits is not None:
            self.embedding_limits = embedding_limits
        self.calls: list[ScriptedCall] = []
        self.embed_calls: list[list[str]] = []
        """The texts of every ``embed`` call (one request each), in order."""
        self.batches = ScriptedBatches()
        """The jobs of this provider's in-process Batch API and the knobs that drive them."""

    def batch_api(self, limits: BatchLimits | None = None) -> ScriptedBatchAPI:
        """This provider's in-process Batch API (``agent.submit_batch`` with no server)."""
        return ScriptedBatchAPI(self, self.batches, limits)

    @classmethod
    def connection_key(cls, settings: Any) -> tuple[Any, ...]:
        # Every agent built with provider="scripted" gets its own script.
        return (next(_instance_ids),)

    def enqueue(self, *replies: Script) -> ScriptedProvider:
        """Append replies to the script; returns self for chaining."""
        self._queue.extend(replies)
        return self

    @property
    def pending(self) -> int:
        """Replies still queued."""
        return len(self._queue)

    async def _next(self, messages: list[Message]) -> ScriptedReply:
        item: Script = self._queue.popleft() if self._queue else self.default
        if isinstance(item, BaseException):
            raise item
        if callable(item) and not isinstance(item, ScriptedReply):
            item = item(messages) if item is _echo else await _in_thread(item, messages)
        if isinstance(item, str):
            return ScriptedReply(text=item)
        return item

    def _completion(self, reply: ScriptedReply, messages: list[Message], params: CallParams) -> Completion:
        usage = reply.usage or Usage(
            input_tokens=sum(_count_tokens(m["content"]) for m in messages),
            output_tokens=_count_tokens(reply.text) + 8 * len(reply.tool_calls),
        )
        return Completion(
            text=reply.text,
            tool_calls=[c.copy() for c in reply.tool_calls],
            usage=usage,
            model=params.model or self.default_model,
            finish_reason="tool_calls" if reply.tool_calls else "stop",
            refusal=reply.refusal,
        )

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        self.calls.append(ScriptedCall([m.copy() for m in messages], tools, params))
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._completion(await self._next(messages), messages, params)

    async def score_labels(self, messages: list[Message], labels: Sequence[str], params: CallParams) -> LabelScores:
        """Each label's probability from ``scores``, or the next scripted reply's answer at ``confidence``."""
        self.calls.append(ScriptedCall([m.copy() for m in messages], None, params))
        if self.scores is not None:
            scripted = await _in_thread(self.scores, messages)
        else:
            scripted = _answer((await self._next(messages)).text)
        weights = scripted if isinstance(scripted, Mapping) else self._likely(scripted, labels)
        unknown = [label for label in weights if label not in labels]
        if unknown or not sum(weights.values()) > 0:
            raise UsageError(f"scripted scores {dict(weights)!r} must weigh the labels {list(labels)!r} (sum > 0)")
        total = sum(weights.values())
        usage = Usage(input_tokens=sum(_count_tokens(m["content"]) for m in messages), output_tokens=1)
        probabilities = {label: weights.get(label, 0.0) / total for label in labels}
        return LabelScores(probabilities, usage, params.model or self.default_model)

    async def embed(self, texts: Sequence[str], model: str | None = None) -> Embeddings:
        """Each text's scripted vector (``embeddings=``), or its hashed words and trigrams; input tokens counted."""
        import numpy as np

        texts = list(texts)
        self.embed_calls.append(texts)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.embeddings is None:
            rows = [hashed_embedding(text, self.embedding_dim) for text in texts]
        else:
            script = self.embeddings
            rows = await asyncio.to_thread(lambda: [list(script(text)) for text in texts])
        lengths = sorted({len(row) for row in rows})
        if len(lengths) > 1:
            raise UsageError(f"scripted embeddings must all have one length, got lengths {lengths}")
        vectors = np.array(rows, dtype=np.float32).reshape(len(texts), len(rows[0]) if rows else self.embedding_dim)
        usage = Usage(input_tokens=sum(_count_tokens(text) for text in texts))
        return Embeddings(vectors, usage, self.embedding_model(model))

    def _likely(self, answer: str, labels: Sequence[str]) -> dict[str, float]:
        """``answer`` at ``confidence``, the rest shared by the other labels (evenly over all if it is none)."""
        if answer not in labels:
            return dict.fromkeys(labels, 1.0)
        rest = (1.0 - self.confidence) / max(1, len(labels) - 1)
        return {label: self.confidence if label == answer else rest for label in labels}

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams
    ) -> AsyncIterator[StreamEvent]:
        self.calls.append(ScriptedCall([m.copy() for m in messages], tools, params))
        reply = await self._next(messages)
        for chunk in _chunks(reply.text, self.chunk_size):
            if self.delay:
                await asyncio.sleep(self.delay)
            yield chunk
        yield self._completion(reply, messages, params)


async def _in_thread(script: Callable[[list[Message]], Any], messages: list[Message]) -> Any:
    """``script(messages)`` in a worker thread: a slow or blocking script must not hold up the event loop.

    On the loop it would keep a cancellation (a notebook's Interrupt, a Stop click) from landing until it
    returned; in a thread the caller's wait is cancelled at once, and the script's late answer is dropped.
    It gets copies of the messages, so a turn undone meanwhile cannot change them under it.
    """
    return await asyncio.to_thread(script, [m.copy() for m in messages])


def _answer(text: str) -> str:
    """A scripted reply as a label: a structured value's JSON (``{"value": ...}`` unwrapped) or the text itself."""
    try:
        value = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(value, dict) and set(value) == {"value"}:
        value = value["value"]
    return value if isinstance(value, str) else json.dumps(value)


def _chunks(text: str, words: int) -> Iterable[str]:
    """Split text into chunks of a few words, keeping the whitespace, like a real stream."""
    pieces = re.findall(r"\S+\s*|\s+", text)
    for i in range(0, len(pieces), max(1, words)):
        yield "".join(pieces[i : i + words])
