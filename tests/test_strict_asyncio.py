"""The suite's own strictness: dropped async work fails the test that dropped it (tests/strict_asyncio.py and
the ``filterwarnings`` of pyproject.toml), checked on a small test file run by a pytest of its own."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LEAKY_TESTS = """
import asyncio
import gc


async def forever():
    await asyncio.Event().wait()


def test_a_task_left_pending():
    loop = asyncio.new_event_loop()

    async def start():
        asyncio.ensure_future(forever())
        await asyncio.sleep(0)

    loop.run_until_complete(start())
    loop.close()
    del loop
    gc.collect()


def test_a_task_exception_never_retrieved():
    async def fail():
        raise ValueError("nobody looks")

    async def start():
        asyncio.ensure_future(fail())
        await asyncio.sleep(0.01)

    asyncio.run(start())
    gc.collect()


def test_a_coroutine_never_awaited():
    async def nothing():
        pass

    nothing()
    gc.collect()


def test_an_async_generator_left_unclosed():
    async def chunks():
        try:
            yield "a"
            yield "b"
        finally:
            await asyncio.sleep(0)

    loop = asyncio.new_event_loop()
    stream = chunks()
    loop.run_until_complete(stream.__anext__())
    loop.close()
    del stream
    gc.collect()


def test_clean_async_code():
    async def chunks():
        yield "a"

    async def main():
        return [c async for c in chunks()]

    assert asyncio.run(main()) == ["a"]
"""


@pytest.mark.slow
def test_dropped_async_work_fails_the_test_that_dropped_it(tmp_path: Path) -> None:
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(LEAKY_TESTS))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            "-p",
            "tests.strict_asyncio",
            "-p",
            "no:cacheprovider",
            "-rA",
            str(tmp_path / "test_leaky.py"),
        ],
        cwd=ROOT,  # ``tests.strict_asyncio`` is imported from the checkout
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = re.findall(r"^(PASSED|FAILED|ERROR) \S*test_leaky\.py::(\w+)", done.stdout, re.M)
    outcomes = {name: outcome for outcome, name in found}
    assert outcomes == {
        "test_a_task_left_pending": "FAILED",
        "test_a_task_exception_never_retrieved": "FAILED",
        "test_a_coroutine_never_awaited": "FAILED",
        "test_an_async_generator_left_unclosed": "FAILED",
        "test_clean_async_code": "PASSED",
    }, done.stdout[-3000:]
    assert "Task was destroyed but it is pending" in done.stdout
    assert "Task exception was never retrieved" in done.stdout
    assert done.returncode == 1
