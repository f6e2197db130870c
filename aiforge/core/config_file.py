"""The YAML config file: where it is (``./aiforge.yaml`` or ``$AIFORGE_CONFIG``), its values and their lines.

The lines let every error about a setting from the file name ``aiforge.yaml:LINE``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiforge.core.types import ConfigError

CONFIG_FILE_NAME = "aiforge.yaml"
CONFIG_ENV_VAR = "AIFORGE_CONFIG"


@dataclass(frozen=True, slots=True)
class YamlConfig:
    """A parsed config file: its values by top-level key, and the line of each key (``chat.<key>`` too)."""

    path: Path
    values: dict[str, Any]
    lines: dict[str, int]


_yaml_cache: dict[Path, tuple[float, int, YamlConfig]] = {}


def config_path() -> Path | None:
    """The YAML file in effect: ``$AIFORGE_CONFIG``, else ``./aiforge.yaml`` if it exists."""
    explicit = os.environ.get(CONFIG_ENV_VAR)
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"{CONFIG_ENV_VAR} points at {str(path)!r}, which is not a readable file; "
                f"fix the path or unset {CONFIG_ENV_VAR}."
            )
        return path
    path = Path.cwd() / CONFIG_FILE_NAME
    return path if path.is_file() else None


def load_yaml(path: Path) -> YamlConfig:
    """The file's settings and key lines; cached until the file changes. ``ConfigError`` if unreadable."""
    import yaml

    try:
        stat = path.stat()
        cached = _yaml_cache.get(path)
        if cached and cached[0] == stat.st_mtime and cached[1] == stat.st_size:
            return cached[2]
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML in {where}: {problem}") from None
    except RecursionError:
        raise ConfigError(f"invalid YAML in {path}: nested too deeply") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of setting names to values")
    lines: dict[str, int] = {}
    if node is not None and hasattr(node, "value") and isinstance(node.value, list):
        for key_node, value_node in node.value:
            lines[str(key_node.value)] = key_node.start_mark.line + 1
            if isinstance(value_node, yaml.MappingNode):  # the chat: section's keys, as chat.<key>
                for inner, _ in value_node.value:
                    lines[f"{key_node.value}.{inner.value}"] = inner.start_mark.line + 1
    config = YamlConfig(path, {str(k): v for k, v in data.items()}, lines)
    _yaml_cache[path] = (stat.st_mtime, stat.st_size, config)
    return config
