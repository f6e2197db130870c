"""A column of files in a batch: PDFs read as text where the provider cannot read them, markers where it can, each
file asked once by content, a bad file failing its row alone, an image on the text path refused before any
request, and the estimate counting files by the provider's rules (the scripted provider and the fake server)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from pydantic import BaseModel

from aiforge import ChatAgent, File, FileInputError, UsageError
from aiforge.core.errors import FailedRowsWarning
from aiforge.core.files import read_file
from aiforge.core.settings import load_settings
from aiforge.providers.scripted import ScriptedProvider
from fakellm import LLMServer
from tests.support.agents import openai_agent

pytest.importorskip("pypdf")
pytest.importorskip("PIL")
pytest.importorskip("fpdf")

from tests.support import documents  # noqa: E402 - needs fpdf2 and Pillow, skipped above without them


class Invoice(BaseModel):
    number: int
    total: float


def invoice_reader(messages: list[dict[str, str]]) -> str:
    """A model that reads 'Invoice <n> total <x>' from the text it is given (the PDF's extracted text)."""
    found = re.search(r"Invoice (\d+) total ([\d.]+)", messages[-1]["content"])
    assert found, messages[-1]["content"]
    return json.dumps({"number": int(found.group(1)), "total": float(found.group(2))})


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    documents.text_pdf(tmp_path / "a.pdf", ["Invoice 17 total 120.50", "Thank you"])
    documents.text_pdf(tmp_path / "b.pdf", ["Invoice 18 total 99.00"])
    shutil.copy(tmp_path / "a.pdf", tmp_path / "a_copy.pdf")
    documents.encrypted_pdf(tmp_path / "locked.pdf", ["Invoice 19 total 5.00"])
    documents.scanned_pdf(tmp_path / "scan.pdf")
    (tmp_path / "broken.png").write_bytes(documents.png(40, 30)[:60])
    documents.png(64, 48, tmp_path / "photo.png")
    return tmp_path


def test_pdfs_are_extracted_into_typed_columns_on_the_input_index_each_file_asked_once(folder: Path) -> None:
    provider = ScriptedProvider(default=invoice_reader)
    frame = pd.DataFrame({"doc": [str(folder / n) for n in ("a.pdf", "b.pdf", "a_copy.pdf")]}, index=["x", "y", "z"])

    out = frame.aiforge.extract("doc", output=Invoice, provider=provider, files=["doc"])

    assert out.index.tolist() == ["x", "y", "z"]
    assert out["number"].tolist() == [17, 18, 17] and out["total"].tolist() == [120.5, 99.0, 120.5]
    assert len(provider.calls) == 2  # a.pdf and its copy under another name: one content, one request
    sent = provider.calls[0].last_user_message
    assert "[page 1]\nInvoice 17 total 120.50\n\n[page 2]\nThank you" in sent and "[[file:" not in sent


def test_a_changed_file_at_the_same_path_is_asked_again_and_a_renamed_copy_is_a_cache_hit(
    folder: Path, tmp_path: Path
) -> None:
    provider = ScriptedProvider(default=invoice_reader)
    agent = ChatAgent(provider=provider, CACHE=str(tmp_path / "cache.sqlite"))
    first = agent.run_batch([File(folder / "b.pdf")], prompt="Read {value}", output=Invoice)
    assert first.results[0].output == Invoice(number=18, total=99.0) and len(provider.calls) == 1

    shutil.copy(folder / "b.pdf", folder / "renamed.pdf")
    again = agent.run_batch([File(folder / "renamed.pdf")], prompt="Read {value}", output=Invoice)
    assert again.cached == 1 and len(provider.calls) == 1  # the same bytes: the reply cached for b.pdf

    documents.text_pdf(folder / "b.pdf", ["Invoice 18 total 101.00"])
    changed = agent.run_batch([File(folder / "b.pdf")], prompt="Read {value}", output=Invoice)
    assert changed.results[0].output == Invoice(number=18, total=101.0) and len(provider.calls) == 2


def test_a_bad_file_fails_its_row_alone_with_its_reason(folder: Path) -> None:
    provider = ScriptedProvider(default=invoice_reader)
    names = ["a.pdf", "missing.pdf", "locked.pdf", "scan.pdf", "b.pdf"]
    frame = pd.DataFrame({"doc": [str(folder / n) for n in names]})

    with pytest.warns(FailedRowsWarning, match="5 rows"):
        out = frame.aiforge.extract("doc", output=Invoice, provider=provider, files=["doc"])

    assert out["number"].tolist()[0] == 17 and out["number"].tolist()[4] == 18
    assert len(provider.calls) == 2
    failed = {f.position: f.error for f in out.attrs["aiforge"].failed}
    assert sorted(failed) == [1, 2, 3] and all(isinstance(e, FileInputError) for e in failed.values())
    assert "missing.pdf: no such file" in str(failed[1])
    assert "locked.pdf" in str(failed[2]) and "encrypted" in str(failed[2])
    assert "scan.pdf" in str(failed[3]) and "OCR" in str(failed[3]) and "reads PDFs" in str(failed[3])
    table = out.attrs["aiforge"].to_dataframe()
    assert table.loc[1, "error"].startswith("FileInputError: ") and "no such file" in table.loc[1, "error"]
    assert out.attrs["aiforge"].requests == 2  # the failed files made no request


def test_a_corrupt_image_fails_its_row_alone_on_the_native_path(folder: Path) -> None:
    provider = ScriptedProvider(default=lambda messages: "seen")
    agent = ChatAgent(provider=provider, FILE_INPUT="native")
    batch = agent.run_batch([File(folder / "photo.png"), File(folder / "broken.png")], prompt="Describe {value}")
    assert batch.results[0].message == "seen" and len(provider.calls) == 1
    marker = read_file(folder / "photo.png").marker
    assert provider.calls[0].last_user_message == f"Describe {marker}"
    assert isinstance(batch.failed[0].error, FileInputError) and "broken.png" in str(batch.failed[0].error)


def test_a_tiff_of_several_pages_fails_its_row_alone_on_the_native_path(folder: Path) -> None:
    from PIL import Image

    pages = [Image.new("L", (80, 100), shade) for shade in (255, 0)]
    pages[0].save(folder / "fax.tif", format="TIFF", save_all=True, append_images=pages[1:])
    provider = ScriptedProvider(default=lambda messages: "seen")
    agent = ChatAgent(provider=provider, FILE_INPUT="native")
    batch = agent.run_batch([File(folder / "fax.tif"), File(folder / "photo.png")], prompt="Describe {value}")
    assert [r.message for r in batch.results] == ["seen"] and len(provider.calls) == 1
    error = batch.failed[0].error
    assert isinstance(error, FileInputError) and "fax.tif: a 2-page TIFF; convert it to PDF" in str(error)


def test_a_pdf_over_the_providers_page_limit_fails_its_row_alone_on_the_native_path(folder: Path) -> None:
    documents.text_pdf(folder / "thick.pdf", [f"page {n}" for n in range(101)])
    provider = ScriptedProvider(default=lambda messages: "read")
    agent = ChatAgent(provider=provider, FILE_INPUT="native")
    batch = agent.run_batch([File(folder / "thick.pdf"), File(folder / "b.pdf")], prompt="Read {value}")
    assert [r.message for r in batch.results] == ["read"] and len(provider.calls) == 1
    error = batch.failed[0].error
    assert isinstance(error, FileInputError) and "thick.pdf: 101 pages, over OpenAI's 100 pages" in str(error)


def test_pdfs_over_the_providers_pages_a_request_together_fail_their_row_alone(folder: Path) -> None:
    documents.text_pdf(folder / "contract.pdf", [f"Clause {n}" for n in range(60)])
    documents.text_pdf(folder / "appendix.pdf", [f"Annex {n}" for n in range(60)])
    frame = pd.DataFrame(
        {"c": [File(folder / "contract.pdf"), File(folder / "a.pdf")], "a": [File(folder / "appendix.pdf")] * 2}
    )
    with LLMServer(strict=True) as server:
        bases = {"openai": server.openai_base_url, "anthropic": server.anthropic_base_url}
        for provider, name in (("openai", "OpenAI"), ("anthropic", "Anthropic")):
            key = provider.upper()
            agent = ChatAgent(
                provider=provider, MAX_RETRIES=0, **{f"{key}_API_KEY": "sk-test", f"{key}_BASE_URL": bases[provider]}
            )
            batch = agent.run_batch(frame, prompt="Compare {c} with {a}")
            assert len(batch.results) == 1 and [f.position for f in batch.failed] == [0]
            error = batch.failed[0].error
            assert isinstance(error, FileInputError) and str(error) == (
                f"contract.pdf, appendix.pdf: 120 pages together, over {name}'s 100 pages a request; send them in "
                "separate rows, or their text (FILE_INPUT='text')."
            )
        assert server.request_count == 2  # the second row, once per provider; the first never reached the vendor


def test_pdfs_over_the_providers_bytes_a_request_together_are_named_with_the_limit() -> None:
    from aiforge.core.file_inputs import over_request_limits

    padded = documents.text_pdf(None, ["x"]) + b"\n" * (17 * 1024 * 1024)
    reads = [read_file(File(padded + bytes([n]), name=f"part{n}.pdf")) for n in (1, 2)]
    assert over_request_limits(reads[:1], "openai", {}) is None
    assert over_request_limits(reads, "anthropic", {}) == (
        "part1.pdf, part2.pdf: 34.0 MB of PDF together, over Anthropic's 32.0 MB a request; send them in separate "
        "rows, or their text (FILE_INPUT='text')."
    )


def test_images_over_the_providers_images_a_request_together_are_counted_and_named() -> None:
    from aiforge.core.file_inputs import over_request_limits

    small = documents.png(8, 8)
    reads = [read_file(File(small, name=f"shot{n}.png")) for n in range(101)]
    assert over_request_limits(reads[:100], "anthropic", {}) is None
    assert over_request_limits(reads, "anthropic", {}) == (
        "shot0.png, shot1.png, shot2.png and 98 more: 101 images, over Anthropic's 100 images a request; send them "
        "over several rows."
    )


def test_an_image_on_the_text_path_is_a_usage_error_before_any_request(folder: Path) -> None:
    provider = ScriptedProvider()
    frame = pd.DataFrame({"doc": [File(folder / "a.pdf"), File(folder / "photo.png")]})
    with pytest.raises(
        UsageError, match=r"photo\.png: .*cannot see images; use a provider that does \(.*openai"
    ) as err:
        frame.aiforge.map("Describe {doc}", provider=provider)
    assert "\n" not in str(err.value) and provider.calls == []


def test_a_text_only_model_or_file_input_text_takes_the_text_path(folder: Path) -> None:
    with LLMServer() as server:
        agent = openai_agent(server, MODEL="gpt-3.5-turbo")
        estimate = agent.estimate_batch([File(folder / "a.pdf")], prompt="Read {value}")
        assert estimate.files == "value: PDFs as their text, extracted here"
        with pytest.raises(UsageError, match="gpt-3.5-turbo"):
            agent.estimate_batch([File(folder / "photo.png")], prompt="Read {value}")
        as_text = openai_agent(server, MODEL="gpt-4o", FILE_INPUT="text").estimate_batch(
            [File(folder / "a.pdf")], prompt="Read {value}"
        )
        native = openai_agent(server, MODEL="gpt-4o").estimate_batch([File(folder / "a.pdf")], prompt="Read {value}")
        assert server.request_count == 0
    assert as_text.files == "value: PDFs as their text, extracted here"
    assert native.files == "value: PDFs sent as files (counted by openai's rules)"
    assert native.input_tokens > as_text.input_tokens + 2 * 85  # each page: its text and an image of the page


def test_the_estimate_counts_an_image_by_the_providers_rules_and_shows_its_path(folder: Path) -> None:
    from aiforge.core.file_rules import file_tokens

    documents.png(1600, 900, folder / "wide.png", seed=3)
    with LLMServer() as server:
        agent = openai_agent(server, MODEL="gpt-4o", IMAGE_DETAIL="high")
        base = agent.estimate_batch(["Describe "], prompt="{value}")
        estimate = agent.estimate_batch([File(folder / "wide.png")], prompt="Describe {value}")
        assert server.request_count == 0
    counted = file_tokens(read_file(folder / "wide.png"), "openai", "gpt-4o", "high")
    assert counted == 85 + 170 * 6  # 1600x900 -> 1365x768 (the short side to 768): 3x2 tiles of 512 px
    assert estimate.input_tokens - base.input_tokens == pytest.approx(counted, abs=2)
    assert estimate.files == "value: images sent as files (counted by openai's rules)"
    assert "files: value: images sent as files" in repr(estimate)


def test_an_anthropic_estimate_counts_images_by_anthropics_rules(folder: Path) -> None:
    from aiforge.core.file_rules import file_tokens

    documents.png(1600, 900, folder / "wide.png", seed=3)
    with LLMServer() as server:
        agent = ChatAgent(
            provider="anthropic", ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=server.anthropic_base_url
        )
        base = agent.estimate_batch(["Describe "], prompt="{value}")
        estimate = agent.estimate_batch([File(folder / "wide.png")], prompt="Describe {value}")
        assert server.request_count == 0
    counted = file_tokens(read_file(folder / "wide.png"), "anthropic", agent.model, "auto")
    assert counted < 1600 * 900 / 750  # resized under Anthropic's 1568 px and ~1.15 megapixels first
    assert estimate.input_tokens - base.input_tokens == pytest.approx(counted, abs=2)
    assert estimate.files == "value: images sent as files (counted by anthropic's rules)"


def test_pack_with_files_sent_as_blocks_is_a_usage_error_and_packs_pdf_text(folder: Path) -> None:
    provider = ScriptedProvider()
    frame = pd.DataFrame({"doc": [str(folder / "a.pdf"), str(folder / "b.pdf")]})
    native = ChatAgent(provider=provider, FILE_INPUT="native")
    with pytest.raises(UsageError, match=r"pack=2 cannot send the files of column 'doc'"):
        native.run_batch(frame, prompt="Read {doc}", files=["doc"], pack=2)
    estimate = ChatAgent(provider=provider).estimate_batch(frame, prompt="Read {doc}", files=["doc"], pack=2)
    assert estimate.to_run == 2 and estimate.files == "doc: PDFs as their text, extracted here" and provider.calls == []


def test_files_names_a_column_of_the_frame(folder: Path) -> None:
    frame = pd.DataFrame({"doc": [str(folder / "a.pdf")]})
    with pytest.raises(UsageError, match=r"files=: no column 'docs' in the frame; did you mean 'doc'\?"):
        frame.aiforge.map("Read {doc}", provider=ScriptedProvider(), files=["docs"])
    with pytest.raises(UsageError, match="files= takes a list of column names"):
        frame.aiforge.map("Read {doc}", provider=ScriptedProvider(), files="doc")


def test_a_str_column_not_named_in_files_stays_text(folder: Path) -> None:
    provider = ScriptedProvider()
    ChatAgent(provider=provider).run_batch(pd.DataFrame({"doc": [str(folder / "a.pdf")]}), prompt="Path: {doc}")
    assert provider.calls[0].last_user_message == f"Path: {folder / 'a.pdf'}"


def test_native_input_on_a_provider_that_sends_text_only_is_a_usage_error(folder: Path) -> None:
    from aiforge.core.file_inputs import file_route

    route = file_route(provider="local", model="SmolLM2", reads=(), rules=None, setting="native")
    with pytest.raises(UsageError, match="FILE_INPUT='native': the local provider sends text only"):
        route.fill(File(folder / "a.pdf"))
    assert load_settings(FILE_INPUT="text").FILE_INPUT == "text"


def test_a_cassette_records_and_replays_files_as_the_provider_sends_them(folder: Path, tmp_path: Path) -> None:
    tape = str(tmp_path / "tape.jsonl")
    with LLMServer() as server:
        recording = openai_agent(server, MODEL="gpt-4o", REPLAY="record", REPLAY_FILE=tape, CACHE=False)
        assert recording.provider.reads_files == ("image", "pdf") and recording.provider.file_rules == "openai"
        recorded = recording.run_batch([File(folder / "photo.png")], prompt="Describe {value}")
        assert not recorded.failed and server.request_count == 1
        replaying = openai_agent(server, MODEL="gpt-4o", REPLAY="replay", REPLAY_FILE=tape, CACHE=False)
        replayed = replaying.run_batch([File(folder / "photo.png")], prompt="Describe {value}")
        assert not replayed.failed and server.request_count == 1
        assert replayed.results[0].output == recorded.results[0].output


def test_prompted_tools_read_the_files_of_the_provider_they_wrap() -> None:
    from aiforge.providers.prompted import PromptedTools

    wrapped = PromptedTools(ScriptedProvider(default="ok"))
    assert (wrapped.reads_files, wrapped.file_rules) == ((), "openai")  # FILE_INPUT="native" can send its markers


def test_image_detail_is_part_of_the_cache_key_of_a_prompt_with_a_file_only(folder: Path, tmp_path: Path) -> None:
    from aiforge.batch.request.cache import with_detail

    cache = str(tmp_path / "cache.sqlite")
    with LLMServer() as server:
        for detail in ("low", "high", "high"):
            agent = openai_agent(server, MODEL="gpt-4o", IMAGE_DETAIL=detail, CACHE=cache)
            agent.run_batch([File(folder / "photo.png")], prompt="Read the fine print in {value}")
        assert server.request_count == 2  # high is asked again, then served from the cache
    params = {"temperature": None}
    assert with_detail(params, "high", ["plain text"]) is params  # a text prompt keeps the key it had


def test_a_changed_file_under_a_checkpoint_is_named(folder: Path, tmp_path: Path) -> None:
    from aiforge.core.errors import CheckpointMismatchError

    agent = ChatAgent(provider=ScriptedProvider(default="ok"))
    frame = pd.DataFrame({"doc": [File(folder / "a.pdf"), File(folder / "b.pdf")]})
    frame.aiforge.map("Read {doc}", agent=agent, checkpoint=str(tmp_path / "ck.sqlite"))
    documents.text_pdf(folder / "b.pdf", ["Invoice 18 total 101.00"])
    with pytest.raises(CheckpointMismatchError, match="first at item 1: b.pdf changed"):
        frame.aiforge.map("Read {doc}", agent=agent, checkpoint=str(tmp_path / "ck.sqlite"))


def test_a_file_reads_as_its_name_in_the_results_table_and_the_turn_log(folder: Path) -> None:
    import aiforge

    agent = ChatAgent(provider=ScriptedProvider(default="ok"), FILE_INPUT="native")
    result = agent.run_batch([File(folder / "photo.png"), File(folder / "gone.png")], prompt="Describe {value}")
    table = result.to_dataframe()
    assert table["input"].tolist() == ["Describe [file: photo.png]", "Describe [file: gone.png]"]
    assert "no such file" in table.loc[1, "error"]
    assert aiforge.logs()["prompt"].tolist() == ["Describe [file: photo.png]"]
    assert "[[file:" in agent.provider.calls[0].last_user_message  # what was sent keeps its marker
