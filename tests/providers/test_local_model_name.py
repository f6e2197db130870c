"""A MODEL the embedded model does not run is said once, in one line (issue 22, item 16).

The weights file is never loaded (llama.cpp loads on the first request), so this needs no model.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from aiforge.core.settings import load_settings
from aiforge.providers import create_provider
from aiforge.providers.local import LocalProvider, weights


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    if not weights.xllamacpp_installed():
        pytest.skip(f"the embedded model's bindings are not installed: {weights.INSTALL_HINT}")
    path = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    path.write_bytes(b"never loaded")
    return path


def built(model_file: Path, model: str | None) -> list[str]:
    """The warnings building the local provider with ``MODEL=model`` gives, as text."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        create_provider(load_settings(PROVIDER="local", LOCAL_MODEL_PATH=str(model_file), MODEL=model), "local")
    return [str(w.message) for w in caught]


def test_a_model_name_the_embedded_model_does_not_run_is_warned_about_once(model_file: Path) -> None:
    assert built(model_file, None) == []

    [message] = built(model_file, "gpt-4o")

    assert "MODEL='gpt-4o' is ignored" in message and "SmolLM2-135M-Instruct" in message
    assert "LOCAL_MODEL_PATH" in message and "\n" not in message
    assert built(model_file, "gpt-4o") == [], "said once"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        LocalProvider(load_settings(LOCAL_MODEL_PATH=str(model_file), MODEL="gpt-4o"))
    assert caught == [], "said once per process, whichever way the provider is built"


@pytest.mark.parametrize("name", ["SmolLM2-135M-Instruct", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf"])
def test_the_embedded_models_own_name_or_file_is_not_warned_about(model_file: Path, name: str) -> None:
    assert built(model_file, name) == []
    assert built(model_file, str(model_file)) == []
