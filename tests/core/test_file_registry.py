"""The registry of files a prompt's markers name (``aiforge.core.files``): every path seen, in-memory files held
weakly, a text that looks like a marker stays text."""

from __future__ import annotations

import gc
import shutil
import weakref
from pathlib import Path

import pytest

from aiforge import ChatAgent, File
from aiforge.core.file_markers import MARKER, known_files, remember, split_markers
from aiforge.core.files import read_file
from aiforge.core.templates import batch_prompts
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer
from tests.support.agents import openai_agent

pytest.importorskip("PIL")

from tests.support import documents  # noqa: E402 - needs Pillow, skipped above without it


def test_a_file_moved_to_another_path_is_sent_from_its_new_path(tmp_path: Path) -> None:
    documents.png(64, 48, tmp_path / "a.png")
    with LLMServer() as server:
        agent = openai_agent(server, MODEL="gpt-4o")
        assert not agent.run_batch([File(tmp_path / "a.png")], prompt="Describe {value}").failed
        shutil.move(tmp_path / "a.png", tmp_path / "b.png")
        moved = agent.run_batch([File(tmp_path / "b.png")], prompt="Say {value}")
        assert not moved.failed and server.request_count == 2


def test_a_file_overwritten_at_its_first_path_is_sent_from_the_copy_that_still_has_the_bytes(tmp_path: Path) -> None:
    documents.png(61, 43, tmp_path / "a.png")  # a size no other test uses: bytes only this test has seen
    shutil.copy(tmp_path / "a.png", tmp_path / "b.png")
    first = remember(read_file(tmp_path / "a.png"))
    documents.png(30, 30, tmp_path / "a.png")  # a.png now holds other bytes
    assert remember(read_file(tmp_path / "b.png")) == first
    (read,) = split_markers(first)
    assert not isinstance(read, str) and read.file.path == tmp_path / "b.png"
    shutil.move(tmp_path / "b.png", tmp_path / "c.png")
    with pytest.raises(Exception, match="b.png: no such file"):  # the newest path is the one named when all fail
        split_markers(first)


def test_the_registry_holds_in_memory_files_weakly_and_the_batch_holds_them_until_done() -> None:
    data = documents.png(16, 16) + b"one megabyte of trailing bytes" * 30_000
    prompts = batch_prompts([data], "Describe {value}")  # bytes in a cell: a File made by the batch
    (digest,) = MARKER.findall(prompts.texts[0])
    assert [f.read() for f in known_files(digest)] == [data]
    held = weakref.ref(prompts.held[0])
    del prompts
    gc.collect()
    assert held() is None and known_files(digest) == []


def test_a_batch_of_in_memory_images_leaves_nothing_behind() -> None:
    agent = ChatAgent(provider=ScriptedProvider(default="ok"), FILE_INPUT="native", CACHE=False)
    files = [File(documents.png(16, 16) + bytes([i]) * 100_000, name=f"{i}.png") for i in range(5)]
    refs = [weakref.ref(f) for f in files]
    assert not agent.run_batch(files, prompt="Describe {value}").failed
    del files
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_a_text_that_looks_like_a_marker_stays_text() -> None:
    unknown = "[[file:0123456789abcdef0123456789abcdef]]"
    assert split_markers(f"a {unknown} b") == [f"a {unknown} b"]
    with LLMServer() as server:
        agent = openai_agent(server, MODEL="gpt-4o")
        result = agent.run_batch([f"quoting {unknown} here"], prompt="Summarize {value}")
        assert not result.failed and server.request_count == 1


def test_a_text_filled_into_a_template_never_attaches_a_known_file() -> None:
    marker = remember(read_file(documents.png(20, 20)))
    (text,) = batch_prompts([f"see {marker}"], "Say {value}").texts
    assert not MARKER.search(text) and text.replace("\u200b", "") == f"Say see {marker}"


def test_a_file_path_expands_the_home_folder() -> None:
    assert File("~/x.pdf").path == Path("~/x.pdf").expanduser() and File("~/x.pdf").name == "x.pdf"


def test_a_wire_files_repr_shows_its_length_not_its_bytes() -> None:
    from aiforge.core.file_rules import wire_file

    sent = wire_file(read_file(File(documents.png(40, 30), name="scan.png")), "openai")
    assert repr(sent) == f"WireFile(image, image/png, {len(sent.data)} bytes, name='scan.png')"
