"""aiforge's errors in IPython: one line in the cell's output, the full traceback a %tb away."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from aiforge.core.types import ConfigError, Interrupted, ProviderError


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.user_ns.update(ConfigError=ConfigError, ProviderError=ProviderError, Interrupted=Interrupted)
    yield ip


def test_an_aiforge_error_shows_as_one_line_outside_the_magics(shell: InteractiveShell) -> None:
    with capture_output() as captured:
        shell.run_cell("def configure():\n    raise ConfigError('unknown setting MODLE')\n\nconfigure()")

    lines = [line for line in captured.stdout.splitlines() if line.strip()]
    assert lines == ["ConfigError: unknown setting MODLE", "(%tb shows the full traceback)"]


def test_tb_still_shows_the_full_traceback(shell: InteractiveShell) -> None:
    with capture_output():
        shell.run_cell("def call_provider():\n    raise ProviderError('boom', provider='openai')\ncall_provider()")
    with capture_output() as captured:
        shell.run_line_magic("tb", "")

    assert "Traceback (most recent call last)" in captured.stdout
    assert "call_provider" in captured.stdout and "ProviderError: boom | provider=openai" in captured.stdout


def test_an_interrupt_is_one_line_and_still_a_keyboard_interrupt(shell: InteractiveShell) -> None:
    with capture_output() as captured:
        shell.run_cell("raise Interrupted('the call was cancelled')")

    assert captured.stdout.strip().splitlines()[0] == "KeyboardInterrupt: the call was cancelled"
    assert issubclass(Interrupted, KeyboardInterrupt)


def test_config_error_carries_setting_and_problem_and_stays_a_value_error() -> None:
    error = ConfigError("invalid value", setting="TEMPERATURE", problem="too high")
    assert isinstance(error, ValueError) and (error.setting, error.problem) == ("TEMPERATURE", "too high")
