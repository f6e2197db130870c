"""``ddf.aiforge.dedup``: the embeddings on the workers, one partition each; the blocking on the client.

A row's group depends on every other row, so dedup cannot stay per partition as ``map`` does. Each partition's
distinct texts are embedded where the partition lives (``process_agent``: one agent per worker process, keys from
the worker's environment); the client gathers the texts and their vectors (a float32 vector per distinct text:
50 000 texts of 384 dimensions are 77 MB), runs the same tiled blocking and confirmation as the pandas accessor
(``near_duplicates.ids_from_vectors``), and returns a **pandas** Series: the work is done by then, and one label per
row is small next to the texts it was computed from. Put it back on the frame with
``ddf.merge(ids.to_frame(), left_index=True, right_index=True)``, or use it on the computed frame.

Each partition sends one embeddings request at a time (each holds up to the provider's batch of texts), so the
requests in flight are at most the worker threads; unlike ``ddf.aiforge.embed`` this needs no distributed Client
(any Dask scheduler runs it). A text found in two partitions is embedded in both (a shared ``cache=`` pays it once);
the confirmation batch runs on the client, ``concurrency`` at a time, with an agent built from the same settings.
Its ``DedupReport`` adds up the partitions' embeddings. When the workers' provider is the embedded model on a chat
model's weights, the client warns once (``ChatModelVectorsWarning``) before any partition is embedded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aiforge.core.types import UsageError
from aiforge.semantic.distinct import DistinctTexts, embed_distinct
from aiforge.semantic.near_duplicates import DedupReport, DedupRequest, check_unique_index, ids_from_vectors

if TYPE_CHECKING:
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    from aiforge.providers.facts import ProviderFacts
    from aiforge.semantic.embeddings import CacheOption, EmbeddingRun

PartEmbeddings = tuple["pd.Series", list[str], "np.ndarray", "EmbeddingRun"]
"""One partition's values, its distinct texts, their vectors, and the run that embedded them (without vectors)."""


def dask_duplicate_ids(
    data: dd.Series, settings: dict[str, Any], request: DedupRequest
) -> tuple[pd.Series, DedupReport]:
    """``duplicate_of`` of every row of ``data`` (computed) and the report; ``settings`` build the agents."""
    import pandas as pd
    from dask.delayed import delayed

    from aiforge.dataframes.partition import check_no_keys

    check_no_keys(settings)
    _warn_if_chat_model_vectors(settings)
    cache = request.options.get("cache")
    parts = [delayed(_embedded_part)(part, settings, cache) for part in data.to_delayed()]
    embedded: list[PartEmbeddings] = delayed(list)(parts).compute()
    values = pd.concat([part[0] for part in embedded]) if embedded else data._meta
    check_unique_index(values.index)
    distinct = DistinctTexts.of(values)
    vectors, run = _gathered(distinct.texts, embedded)
    agent = None
    if request.judges:
        from aiforge.chat.agent import ChatAgent

        agent = ChatAgent(memory="none", **settings)
    return ids_from_vectors(values.index, distinct, vectors, request, agent, run)


def client_facts(settings: dict[str, Any]) -> ProviderFacts:
    """The facts of the providers the workers' ``settings`` choose, read on the client (no client, no model)."""
    from aiforge.core.settings import AIForgeSettings, load_settings
    from aiforge.providers.facts import provider_facts

    fields = AIForgeSettings.model_fields
    return provider_facts(load_settings(**{k.upper(): v for k, v in settings.items() if k.upper() in fields}))


def _warn_if_chat_model_vectors(settings: dict[str, Any]) -> None:
    """On the client, once: the workers' agents would be the embedded model on a chat model's weights."""
    from aiforge.batch.embedded import warn_chat_model_vectors

    model = client_facts(settings).chat_model_vectors
    if model is not None:
        warn_chat_model_vectors("dedup", model)


def _embedded_part(part: pd.Series, settings: dict[str, Any], cache: CacheOption) -> PartEmbeddings:
    """On a worker: the partition's distinct texts embedded with the process's agent."""
    from aiforge.dataframes.partition import process_agent

    distinct = DistinctTexts.of(part)
    # One request at a time per partition: requests in flight never exceed the worker threads running partitions.
    vectors, run = embed_distinct(process_agent(settings), distinct.texts, cache, concurrency=1)
    return part, distinct.texts, vectors, replace(run, vectors=vectors[:0])


def _gathered(texts: list[str], embedded: list[PartEmbeddings]) -> tuple[np.ndarray, EmbeddingRun | None]:
    """The vector of each of ``texts`` from the partitions, and their runs added up into one."""
    import numpy as np

    vector_of: dict[str, np.ndarray] = {}
    for _, part_texts, vectors, _ in embedded:
        vector_of.update(zip(part_texts, vectors, strict=True))
    dims = {len(vector) for vector in vector_of.values()}
    if len(dims) > 1:
        raise UsageError(f"the partitions' embeddings have different lengths {sorted(dims)}: one model for all")
    dim = dims.pop() if dims else 0
    matrix = np.stack([vector_of[text] for text in texts]) if texts else np.zeros((0, dim), dtype=np.float32)
    runs = [run for _, part_texts, _, run in embedded if part_texts]
    if not runs:
        return matrix, None
    total = runs[0]
    for run in runs[1:]:
        total = replace(
            total,
            usage=total.usage + run.usage,
            cost=total.cost + run.cost,
            priced=total.priced and run.priced,
            requests=total.requests + run.requests,
            embedded=total.embedded + run.embedded,
            cached=total.cached + run.cached,
            saved_cost=total.saved_cost + run.saved_cost,
        )
    return matrix, replace(total, vectors=matrix)
