"""A pytest plugin that fails a test when asyncio reports a task or future it had to drop.

"Task was destroyed but it is pending!" (an async generator finalised by the garbage collector while its
loop was no longer running it), "Task exception was never retrieved" and "Future exception was never
retrieved" reach no test as an exception: asyncio's default exception handler logs them on the ``asyncio``
logger and the test passes. This plugin collects those records and raises in the phase (setup, call,
teardown) during which they were logged, like pytest's own plugin does for unraisable exceptions; records
logged after the last test (a garbage collection at the end) fail the run. Unclosed async generators and
un-awaited coroutines are caught by ``filterwarnings`` in pyproject.toml instead.

Loaded by ``tests/conftest.py`` (``pytest_plugins``); ``pytest -p no:tests.strict_asyncio`` turns it off.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Iterator

import pytest

DROPPED = (
    "Task was destroyed but it is pending",
    "Task exception was never retrieved",
    "Future exception was never retrieved",
)
"""The starts of the messages asyncio logs for work it dropped (see ``BaseEventLoop.default_exception_handler``)."""


class DroppedAsyncWork(AssertionError):
    """asyncio dropped a task or a future's exception during this test (its log record is the message)."""


class _Collector(logging.Handler):
    """Keeps the asyncio logger's records about dropped work; they may come from any thread."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self._lock_records = threading.Lock()
        self._records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(DROPPED):
            with self._lock_records:
                self._records.append(self.format(record))

    def take(self) -> list[str]:
        with self._lock_records:
            records, self._records = self._records, []
        return records


_KEY = pytest.StashKey[_Collector]()


def pytest_configure(config: pytest.Config) -> None:
    collector = _Collector()
    collector.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("asyncio").addHandler(collector)
    config.stash[_KEY] = collector


def pytest_unconfigure(config: pytest.Config) -> None:
    collector = config.stash.get(_KEY, None)
    if collector is not None:
        logging.getLogger("asyncio").removeHandler(collector)


def _raise_collected(config: pytest.Config) -> None:
    records = config.stash[_KEY].take()
    if records:
        raise DroppedAsyncWork("asyncio dropped work during this test:\n\n" + "\n\n".join(records))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    _raise_collected(item.config)  # logged between tests: blame the next one rather than nobody
    result = yield
    _raise_collected(item.config)
    return result


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    result = yield
    _raise_collected(item.config)
    return result


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    result = yield
    _raise_collected(item.config)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    gc.collect()  # what is dropped only when a cycle is collected shows up now, not after the report
    records = session.config.stash[_KEY].take()
    if records:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "asyncio dropped work after the last test:\n\n" + "\n\n".join(records)
        if reporter is not None:
            reporter.write_line(text, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
