"""The settings an option sets, one map for every surface: ``aiforge chat``, ``aiforge batch`` and ``%chat``.

``--model``, ``--temperature`` and ``--max-tokens`` override ``MODEL``, ``TEMPERATURE`` and ``MAX_TOKENS`` for
the agent they create; an invalid value is reported against the option, not the setting.
"""

from __future__ import annotations

from typing import Any

SETTING_OF_OPTION: dict[str, str] = {"model": "MODEL", "temperature": "TEMPERATURE", "max_tokens": "MAX_TOKENS"}
"""An option's argparse destination -> the setting it overrides."""


def option_settings(args: Any) -> dict[str, Any]:
    """The settings parsed options ``args`` set: each option given (not None), by its setting's name."""
    values = {setting: getattr(args, option) for option, setting in SETTING_OF_OPTION.items()}
    return {setting: value for setting, value in values.items() if value is not None}


def option_of(setting: str | None) -> str | None:
    """The option that sets ``setting`` (``--max-tokens`` for ``MAX_TOKENS``); None when no option sets it."""
    option = next((option for option, name in SETTING_OF_OPTION.items() if name == setting), None)
    return None if option is None else "--" + option.replace("_", "-")
