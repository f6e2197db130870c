"""The ``ConfigError`` a setting that cannot load becomes: which setting, where it came from, what was meant.

Never the rejected value itself: it may be a key.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import ValidationError

from aiforge.core.config_file import YamlConfig
from aiforge.core.types import ConfigError


def suggest(name: str, fields: Collection[str]) -> str:
    """`` Did you mean X?`` for the setting closest to ``name``, or nothing."""
    close = difflib.get_close_matches(name.upper(), fields, n=1) or difflib.get_close_matches(name, fields, n=1)
    return f" Did you mean {close[0]}?" if close else ""


def json_environment_error(json_fields: Collection[str], prefix: str) -> ConfigError:
    """pydantic-settings could not decode a complex field from the environment (it reads them as JSON)."""
    variables = [prefix + spelt for name in json_fields for spelt in dict.fromkeys((name.upper(), name))]
    names = [variable for variable in variables if variable in os.environ]
    where = f"environment variable {names[0]}" if names else "the environment"
    example = '{"my-model": {"input": 1.0, "output": 2.0}}'
    return ConfigError(
        f"invalid value in {where}: complex settings are read from the environment as JSON, "
        f"e.g. AIFORGE_PRICES='{example}' (SettingsError)"
    )


def validation_error(
    exc: ValidationError, model_fields: Mapping[str, Any], overrides: Mapping[str, Any],
    yaml_config: YamlConfig | None, *, prefix: str, standard_env: Collection[str],
) -> ConfigError:
    """The first problem pydantic found, as one line naming the setting and where its value came from."""
    first = exc.errors()[0]
    loc = first.get("loc") or ("settings",)
    field = str(loc[0])
    if field not in model_fields and field.startswith(prefix):
        field = field[len(prefix) :]
    if field not in model_fields and field.lower() in model_fields:  # a section read as AIFORGE_CHAT
        field = field.lower()
    detail = ".".join([field, *(str(p) for p in loc[1:])])
    if first.get("type") == "extra_forbidden":
        section = getattr(model_fields[field].annotation, "model_fields", None)
        close = difflib.get_close_matches(detail.rsplit(".", 1)[-1], list(section or ()), n=1)
        hint = f" Did you mean {field}.{close[0]}?" if close else suggest(detail, model_fields)
        line = yaml_config.lines.get(detail) if yaml_config is not None else None
        where = f" in {yaml_config.path}:{line}" if yaml_config is not None and line else ""
        return ConfigError(f"unknown setting {detail!r}{where}.{hint}")
    env_names = [prefix + field.upper(), prefix + field, *([field] if field in standard_env else [])]
    where = _where(field, overrides, yaml_config, env_names)
    return ConfigError(
        f"invalid value for {detail} ({where}): {first.get('msg')}", setting=field, problem=str(first.get("msg"))
    )


def _where(field: str, overrides: Mapping[str, Any], yaml_config: YamlConfig | None, env_names: list[str]) -> str:
    if field in overrides:
        return f"keyword argument {field}="
    for env_name in env_names:
        if env_name in os.environ:
            return f"environment variable {env_name}"
    if yaml_config is not None and field in yaml_config.values:
        line = yaml_config.lines.get(field)
        return f"{yaml_config.path}:{line}" if line else str(yaml_config.path)
    return "settings"
