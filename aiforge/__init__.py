"""aiforge-kit: a notebook-first toolkit for working with LLMs.

Heavy dependencies (provider SDKs, LangGraph, pandas, ipywidgets) load on first use, not here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from aiforge.dataframes.hook import register_accessor_with_pandas as _register_accessor_with_pandas

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "ChatAgent": "aiforge.chat.agent",
    "ChatResponse": "aiforge.chat.response",
    "ToolCallRecord": "aiforge.chat.response",
    "ChatPanel": "aiforge.jupyter.panel",
    "AIForgeSettings": "aiforge.core.settings",
    "load_settings": "aiforge.core.settings",
    "setup_logging": "aiforge.core.logs",
    "BatchResult": "aiforge.batch.results",
    "Cascade": "aiforge.batch.cascade",
    "BaseModule": "aiforge.modules.base",
    "CostTracker": "aiforge.core.costs",
    "describe": "aiforge.core.describe",
    "File": "aiforge.core.files",
    "files": "aiforge.dataframes.files",
    "Provider": "aiforge.providers.base",
    "register_provider": "aiforge.providers",
    "ScriptedProvider": "aiforge.providers.scripted",
    # Every error and warning a user can meet (tests/test_public_errors.py walks the package for them):
    "AIForgeError": "aiforge.core.errors",
    "ConfigError": "aiforge.core.errors",
    "UsageError": "aiforge.core.errors",
    "Interrupted": "aiforge.core.errors",
    "ProviderError": "aiforge.core.errors",
    "RateLimitError": "aiforge.core.errors",
    "APITimeoutError": "aiforge.core.errors",
    "APIConnectionError": "aiforge.core.errors",
    "AuthenticationError": "aiforge.core.errors",
    "PermissionDeniedError": "aiforge.core.errors",
    "NotFoundError": "aiforge.core.errors",
    "BadRequestError": "aiforge.core.errors",
    "ContextWindowExceededError": "aiforge.core.errors",
    "OutputValidationError": "aiforge.core.errors",
    "OutputRefusedError": "aiforge.core.errors",
    "FailedRowsWarning": "aiforge.core.errors",
    "ItemNotRunError": "aiforge.core.errors",
    "StoreError": "aiforge.core.errors",
    "CheckpointMismatchError": "aiforge.core.errors",
    "ReplayMismatchError": "aiforge.core.errors",
    "BudgetExceededError": "aiforge.core.errors",
    "MissingValueError": "aiforge.core.errors",
    "FileInputError": "aiforge.core.errors",
    "BatchInterrupted": "aiforge.core.errors",
    "JobNotFinishedError": "aiforge.core.errors",
    "EmbeddedModelWarning": "aiforge.core.errors",
    "ChatModelVectorsWarning": "aiforge.core.errors",
    "AggregationError": "aiforge.core.errors",
    "TruncatedRowWarning": "aiforge.core.errors",
    "ComparisonFailedError": "aiforge.core.errors",
    "logs": "aiforge.store.access",
    "sessions": "aiforge.store.access",
    "export_session": "aiforge.store.access",
    "import_session": "aiforge.store.access",
}

__all__ = [
    "AIForgeError",
    "AIForgeSettings",
    "APIConnectionError",
    "APITimeoutError",
    "AggregationError",
    "AuthenticationError",
    "BadRequestError",
    "BaseModule",
    "BatchInterrupted",
    "BatchResult",
    "BudgetExceededError",
    "Cascade",
    "ChatAgent",
    "ChatModelVectorsWarning",
    "ChatPanel",
    "ChatResponse",
    "CheckpointMismatchError",
    "ComparisonFailedError",
    "ConfigError",
    "ContextWindowExceededError",
    "CostTracker",
    "EmbeddedModelWarning",
    "FailedRowsWarning",
    "Interrupted",
    "ItemNotRunError",
    "JobNotFinishedError",
    "MissingValueError",
    "File",
    "FileInputError",
    "NotFoundError",
    "OutputRefusedError",
    "OutputValidationError",
    "PermissionDeniedError",
    "Provider",
    "ProviderError",
    "RateLimitError",
    "ReplayMismatchError",
    "ScriptedProvider",
    "StoreError",
    "ToolCallRecord",
    "TruncatedRowWarning",
    "UsageError",
    "__version__",
    "describe",
    "export_session",
    "files",
    "import_session",
    "load_ipython_extension",
    "load_settings",
    "logs",
    "register_provider",
    "sessions",
    "setup_logging",
    "unload_ipython_extension",
]

if TYPE_CHECKING:
    from aiforge.batch.cascade import Cascade
    from aiforge.batch.results import BatchResult
    from aiforge.chat.agent import ChatAgent
    from aiforge.chat.response import ChatResponse, ToolCallRecord
    from aiforge.core.costs import CostTracker
    from aiforge.core.describe import describe
    from aiforge.core.errors import (
        AggregationError,
        AIForgeError,
        APIConnectionError,
        APITimeoutError,
        AuthenticationError,
        BadRequestError,
        BatchInterrupted,
        BudgetExceededError,
        ChatModelVectorsWarning,
        CheckpointMismatchError,
        ComparisonFailedError,
        ConfigError,
        ContextWindowExceededError,
        EmbeddedModelWarning,
        FailedRowsWarning,
        FileInputError,
        Interrupted,
        ItemNotRunError,
        JobNotFinishedError,
        MissingValueError,
        NotFoundError,
        OutputRefusedError,
        OutputValidationError,
        PermissionDeniedError,
        ProviderError,
        RateLimitError,
        ReplayMismatchError,
        StoreError,
        TruncatedRowWarning,
        UsageError,
    )
    from aiforge.core.files import File
    from aiforge.core.logs import setup_logging
    from aiforge.core.settings import AIForgeSettings, load_settings
    from aiforge.dataframes.files import files
    from aiforge.jupyter.panel import ChatPanel
    from aiforge.modules.base import BaseModule
    from aiforge.providers import register_provider
    from aiforge.providers.base import Provider
    from aiforge.providers.scripted import ScriptedProvider
    from aiforge.store.access import export_session, import_session, logs, sessions


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aiforge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext aiforge``: register the ``%%chat`` magics."""
    from aiforge.jupyter.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from aiforge.jupyter.magics import unload_ipython_extension as unload

    unload(ipython)


_register_accessor_with_pandas()  # df.aiforge / s.aiforge, without importing pandas here
