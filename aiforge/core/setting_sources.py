"""Where a setting is read from: its environment variables (``AIFORGE_<NAME>``, and the standard names such as
``OPENAI_API_KEY``), the YAML file as a pydantic-settings source, and the check that no ``AIFORGE_*`` variable is a
misspelt setting. The settings themselves are declared in ``core/settings.py``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection
from typing import Any

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from aiforge.core.config_file import CONFIG_ENV_VAR, config_path, load_yaml
from aiforge.core.types import ConfigError

ENV_PREFIX = "AIFORGE_"


STANDARD_ENV = frozenset(
    {"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST"}
)


def env_field(name: str) -> Any:
    """A field also read from its standard environment name (``OPENAI_API_KEY``...)."""
    return Field(default=None, validation_alias=AliasChoices(ENV_PREFIX + name, name))


def section_field(name: str, factory: Any) -> Any:
    """A section (``chat``): read from ``AIFORGE_CHAT`` as JSON, as every other setting's upper-case variable, and
    from ``AIFORGE_chat`` (the settings are case-sensitive, so without the alias only the field's own case is read)."""
    return Field(default_factory=factory, validation_alias=AliasChoices(ENV_PREFIX + name.upper(), ENV_PREFIX + name))


def where_to_set(name: str) -> str:
    """Where a user sets the setting ``name``: the environment variables it is read from, and the YAML key.

    ``AIFORGE_<NAME>``, and the bare name only for the standard ones (``OPENAI_API_KEY``); a bare
    ``GATEWAY_API_KEY`` is not read, and when one is set in the environment the text says so.
    """
    variables = (name, ENV_PREFIX + name) if name in STANDARD_ENV else (ENV_PREFIX + name,)
    unread = name not in STANDARD_ENV and os.environ.get(name) and not os.environ.get(ENV_PREFIX + name)
    note = f" ({name} is set in the environment, but aiforge reads only {ENV_PREFIX}{name})" if unread else ""
    return f"{' or '.join(variables)} in the environment, or {name} in aiforge.yaml{note}"


class YamlSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        path = config_path()
        # Not ``self.config``: the base class keeps the settings class's model_config there.
        self.yaml_config = load_yaml(path) if path else None

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        raise NotImplementedError  # __call__ is overridden

    def __call__(self) -> dict[str, Any]:
        return dict(self.yaml_config.values) if self.yaml_config else {}


# aiforge's own environment variables that are not settings.
OTHER_ENV = frozenset({CONFIG_ENV_VAR, "AIFORGE_RESEARCH_BASE_URL"})


# A misspelling is close: an unrelated AIFORGE_* variable (another tool's) is left alone.
_ENV_TYPO_CUTOFF = 0.75


def check_environment(fields: Collection[str]) -> None:
    """A misspelt ``AIFORGE_*`` variable (``AIFORGE_MODLE``, ``AIFORGE_model``) is an error, not ignored.

    A section (``chat``) is read as ``AIFORGE_CHAT`` (and ``AIFORGE_chat``, its field's case): both are known."""
    sections = {field.upper() for field in fields if field.islower()}
    known = {ENV_PREFIX + field for field in fields} | {ENV_PREFIX + name for name in sections} | OTHER_ENV
    names = sorted({field for field in fields if not field.islower()} | sections)
    for env_name in sorted(os.environ):
        if not env_name.startswith(ENV_PREFIX) or env_name in known:
            continue
        rest = env_name[len(ENV_PREFIX) :]
        close = difflib.get_close_matches(rest.upper(), names, n=1, cutoff=_ENV_TYPO_CUTOFF)
        if close:
            case = " (names are upper-case)" if rest.upper() == close[0] else ""
            raise ConfigError(
                f"environment variable {env_name} is not a setting; did you mean {ENV_PREFIX}{close[0]}?{case}"
            )
