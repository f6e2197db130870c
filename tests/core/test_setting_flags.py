"""One map from options to settings, shared by ``aiforge chat``, ``aiforge batch`` and ``%chat``."""

from __future__ import annotations

from argparse import Namespace

from aiforge.core.setting_flags import option_of, option_settings


def test_only_the_options_given_override_their_settings() -> None:
    args = Namespace(model="gpt-4o-mini", temperature=0.0, max_tokens=None, provider="openai")
    assert option_settings(args) == {"MODEL": "gpt-4o-mini", "TEMPERATURE": 0.0}


def test_a_setting_names_the_option_that_sets_it() -> None:
    options = [option_of(s) for s in ("MODEL", "TEMPERATURE", "MAX_TOKENS")]
    assert options == ["--model", "--temperature", "--max-tokens"]
    assert option_of("TIMEOUT") is None and option_of(None) is None
