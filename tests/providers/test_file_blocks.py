"""Files in a prompt reach the vendors as their own content blocks, through the real openai and anthropic SDKs.

A row's prompt holds file markers (``core.files``); the wire expands them into OpenAI ``image_url`` / ``file`` parts
and Anthropic ``image`` / ``document`` blocks (``providers.file_blocks``), with the bytes ``wire_file`` sends. The
strict fake server checks those blocks as the vendors' APIs do and answers a malformed one with their error shape.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest

from aiforge import ChatAgent, File, FileInputError
from aiforge.batch.batch_api import BatchJob
from aiforge.core.errors import BadRequestError
from aiforge.core.file_markers import remember
from aiforge.core.file_rules import file_tokens, sent_image_size, wire_file
from aiforge.core.files import ReadFile, read_file
from aiforge.core.types import CallParams
from aiforge.providers.sdk import sdk_call
from fakellm import LLMServer
from fakellm.file_blocks import anthropic_image_tokens, openai_image_tokens
from tests.providers.conftest import ANTHROPIC, OPENAI, WireProtocol
from tests.support.documents import jpeg, png, text_pdf

Image = pytest.importorskip("PIL.Image")
pytest.importorskip("fpdf")


# ---------------------------------------------------------------------------
# Real files: Pillow images, fpdf2 PDFs
# ---------------------------------------------------------------------------


def image_bytes(width: int, height: int, fmt: str = "PNG", seed: int = 0) -> bytes:
    """A real photo-like PNG or JPEG (``tests.support.documents``)."""
    return (png if fmt == "PNG" else jpeg)(width, height, seed=seed)


def pdf_bytes(pages: int = 2, title: str = "Invoice") -> bytes:
    """A real PDF with a text layer, one line a page (``tests.support.documents``)."""
    return text_pdf(None, [f"{title} 42, page {page}: total 118.00 EUR" for page in range(1, pages + 1)])


def marked(path: Path, data: bytes) -> tuple[str, ReadFile]:
    """``data`` written to ``path`` and read as a prompt's file: its marker and what was read."""
    path.write_bytes(data)
    read = read_file(path)
    return remember(read), read


def agent_for(server: LLMServer, protocol: WireProtocol, **settings: Any) -> ChatAgent:
    key = {"openai": "OPENAI", "anthropic": "ANTHROPIC"}[protocol.name]
    base = server.openai_base_url if protocol.name == "openai" else server.anthropic_base_url
    return ChatAgent(
        provider=protocol.name, MAX_RETRIES=0, **{f"{key}_API_KEY": "sk-test", f"{key}_BASE_URL": base}, **settings
    )


def user_content(body: dict[str, Any]) -> list[dict[str, Any]]:
    (user,) = [m for m in body["messages"] if m["role"] == "user"]
    return user["content"]


def expected_block(protocol: WireProtocol, read: ReadFile, detail: str = "auto") -> dict[str, Any]:
    """The block the vendor defines for ``read``, with the bytes ``wire_file`` sends."""
    sent = wire_file(read, protocol.name, detail)  # type: ignore[arg-type]
    data = base64.b64encode(sent.data).decode()
    if protocol.name == "openai":
        if sent.kind == "pdf":
            return {"type": "file", "file": {"filename": sent.name, "file_data": f"data:application/pdf;base64,{data}"}}
        return {"type": "image_url", "image_url": {"url": f"data:{sent.mime};base64,{data}", "detail": detail}}
    kind = "document" if sent.kind == "pdf" else "image"
    return {"type": kind, "source": {"type": "base64", "media_type": sent.mime, "data": data}}


def sent_bytes(block: dict[str, Any]) -> bytes:
    if block["type"] == "image_url":
        return base64.b64decode(block["image_url"]["url"].split(",", 1)[1])
    if block["type"] == "file":
        return base64.b64decode(block["file"]["file_data"].split(",", 1)[1])
    return base64.b64decode(block["source"]["data"])


@pytest.fixture
def srv() -> Any:
    with LLMServer(strict=True) as server:
        yield server


# ---------------------------------------------------------------------------
# Each kind of file, as the vendor's block
# ---------------------------------------------------------------------------

KINDS = {
    "png": ("scan.png", lambda: image_bytes(320, 200, "PNG")),
    "jpeg": ("photo.jpg", lambda: image_bytes(300, 400, "JPEG")),
    "pdf": ("invoice.pdf", lambda: pdf_bytes(2)),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_file_in_a_row_arrives_as_the_vendors_block(srv, protocol, tmp_path, kind) -> None:
    name, make = KINDS[kind]
    marker, read = marked(tmp_path / name, make())
    agent = agent_for(srv, protocol)

    result = agent.run_batch([f"What does this file say? {marker}"], cache=False)

    assert not result.failed
    (request,) = srv.requests
    assert request.status == 200  # the strict fake accepted the block
    content = user_content(request.body)
    assert content == [{"type": "text", "text": "What does this file say? "}, expected_block(protocol, read)]
    assert sent_bytes(content[1]) == wire_file(read, protocol.name).data  # type: ignore[arg-type]


def test_two_files_keep_the_users_order_with_the_text_between(srv, protocol, tmp_path) -> None:
    first, png = marked(tmp_path / "before.png", image_bytes(64, 48, "PNG"))
    second, pdf = marked(tmp_path / "after.pdf", pdf_bytes(1, "Receipt"))
    agent = agent_for(srv, protocol)

    agent.run_batch([f"{first}\nIs this the same shop as\n{second}\n? Answer yes or no."], cache=False)

    (request,) = srv.requests
    assert request.status == 200
    assert user_content(request.body) == [
        expected_block(protocol, png),
        {"type": "text", "text": "\nIs this the same shop as\n"},
        expected_block(protocol, pdf),
        {"type": "text", "text": "\n? Answer yes or no."},
    ]


def test_a_prompt_without_markers_is_sent_as_before(srv, protocol) -> None:
    agent_for(srv, protocol).run_batch(["Just text [[file:not-a-digest]]"], cache=False)

    (request,) = srv.requests
    content = user_content(request.body)
    expected = "Just text [[file:not-a-digest]]"
    assert content == (expected if protocol.name == "openai" else [{"type": "text", "text": expected}])


def test_an_oversized_image_arrives_resized(srv, protocol, tmp_path) -> None:
    marker, read = marked(tmp_path / "poster.jpg", image_bytes(2400, 1800, "JPEG"))
    agent_for(srv, protocol).run_batch([f"Read the poster {marker}"], cache=False)

    (request,) = srv.requests
    assert request.status == 200
    block = user_content(request.body)[1]
    arrived = sent_bytes(block)
    assert arrived == wire_file(read, protocol.name, model=protocol.model).data  # type: ignore[arg-type]
    width, height = Image.open(io.BytesIO(arrived)).size
    # What the vendor's model reads of it (file_rules): Anthropic 1568 px on the long edge and ~1,600 tokens of area
    # (1264 x 948); gpt-4o at high detail its tiles' 768 px short side (a patch model, gpt-4.1-mini, 1536 patches).
    assert (width, height) == sent_image_size(2400, 1800, protocol.name, model=protocol.model)  # type: ignore[arg-type]
    assert (width, height) == ((1264, 948) if protocol.name == "anthropic" else (1024, 768))
    assert sent_image_size(2400, 1800, "openai", model="gpt-4.1-mini") == (1408, 1056)
    assert len(arrived) < len(read.data)
    assert abs(width / height - 4 / 3) < 0.01  # the aspect ratio kept


def test_openai_images_go_at_the_image_detail_setting(srv, tmp_path) -> None:
    marker, read = marked(tmp_path / "chart.png", image_bytes(1024, 1024, "PNG"))
    agent_for(srv, OPENAI, IMAGE_DETAIL="low").run_batch([f"Chart: {marker}"], cache=False)

    (request,) = srv.requests
    assert user_content(request.body)[1] == expected_block(OPENAI, read, "low")
    # The fake counts a low-detail image as the base tokens alone (85 on gpt-4o, 2833 on gpt-4o-mini).
    assert request.status == 200


async def test_the_fakes_usage_counts_image_tokens_by_the_published_rules(srv, protocol, tmp_path) -> None:
    marker, read = marked(tmp_path / "photo.png", image_bytes(800, 600, "PNG"))
    provider = protocol.provider_class(protocol.settings(protocol.base_url(srv)))
    try:
        text_only = await provider.complete([{"role": "user", "content": "Describe it"}], None, protocol.params)
        with_file = await provider.complete(
            [{"role": "user", "content": f"Describe it{marker}"}], None, protocol.params
        )
    finally:
        await provider.aclose()

    extra = with_file.usage.input_tokens - text_only.usage.input_tokens
    sent = Image.open(io.BytesIO(wire_file(read, protocol.name).data)).size  # type: ignore[arg-type]
    if protocol.name == "anthropic":
        assert extra == anthropic_image_tokens(*sent) == 640  # 800 x 600 / 750
    else:
        # gpt-4o-mini at high detail ("auto" counted as high): 800 x 600 is 2 x 2 tiles of 512 px.
        assert extra == openai_image_tokens(*sent, "auto", protocol.model) == 2833 + 5667 * 4


async def usage_of_file(server: LLMServer, protocol: WireProtocol, marker: str, **settings: Any) -> int:
    """The input tokens the fake bills for ``marker``'s file: a call with it less the same call without it."""
    provider = protocol.provider_class(protocol.settings(protocol.base_url(server), **settings))
    try:
        usages = [
            (await provider.complete([{"role": "user", "content": "Read:" + tail}], None, protocol.params)).usage
            for tail in ("", marker)
        ]
    finally:
        await provider.aclose()
    return usages[1].input_tokens - usages[0].input_tokens


@pytest.mark.parametrize("size", [(300, 200), (1024, 1024), (3000, 1000), (600, 4000)])
@pytest.mark.parametrize("detail", ["auto", "low"])
async def test_the_estimate_of_an_image_is_what_the_fake_bills(srv, protocol, tmp_path, size, detail) -> None:
    marker, read = marked(tmp_path / "photo.jpg", image_bytes(*size, "JPEG"))
    billed = await usage_of_file(srv, protocol, marker, IMAGE_DETAIL=detail)
    assert billed == file_tokens(read, protocol.name, protocol.model, detail)  # type: ignore[arg-type]


async def test_the_estimate_of_a_pdf_is_close_to_what_the_fake_bills(srv, protocol, tmp_path) -> None:
    marker, read = marked(tmp_path / "report.pdf", pdf_bytes(3, "Quarterly report"))
    billed = await usage_of_file(srv, protocol, marker)
    estimate = file_tokens(read, protocol.name, protocol.model)  # type: ignore[arg-type]
    # The page images count the same; the text differs by what a PDF library adds (spaces, line breaks).
    assert abs(billed - estimate) <= 3 * 4


# ---------------------------------------------------------------------------
# A file gone or changed fails its row as FileInputError, before anything is sent
# ---------------------------------------------------------------------------


def test_a_file_deleted_after_its_marker_was_made_fails_that_row_alone(srv, protocol, tmp_path) -> None:
    kept, _ = marked(tmp_path / "kept.png", image_bytes(40, 40, "PNG", seed=1))
    gone, _ = marked(tmp_path / "gone.png", image_bytes(40, 40, "PNG", seed=2))
    (tmp_path / "gone.png").unlink()

    result = agent_for(srv, protocol).run_batch([f"A {kept}", f"B {gone}"], cache=False)

    assert len(result.results) == 1
    (failure,) = result.failed
    assert failure.index == 1
    assert isinstance(failure.error, FileInputError)
    assert "gone.png" in str(failure.error)
    assert len(srv.requests) == 1  # the row whose file is gone sent nothing


def test_a_file_changed_after_its_marker_was_made_fails_with_FileInputError(srv, protocol, tmp_path) -> None:
    marker, _ = marked(tmp_path / "scan.png", image_bytes(40, 40, "PNG", seed=3))
    (tmp_path / "scan.png").write_bytes(image_bytes(40, 40, "PNG", seed=4))

    with pytest.raises(FileInputError, match="changed"):
        agent_for(srv, protocol).chat(f"What is this? {marker}")
    assert srv.requests == []


# ---------------------------------------------------------------------------
# The strict fake rejects malformed blocks as the vendors do; aiforge maps that to BadRequestError
# ---------------------------------------------------------------------------

PNG_B64 = base64.b64encode(image_bytes(16, 16, "PNG")).decode()
JPEG_B64 = base64.b64encode(image_bytes(16, 16, "JPEG")).decode()

OPENAI_MALFORMED = {
    "bad base64": (
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,not*base64!"}},
        "Expected a base64-encoded data URL with an image MIME type",
    ),
    "unsupported type": (
        {"type": "image_url", "image_url": {"url": "data:image/bmp;base64," + PNG_B64}},
        "You uploaded an unsupported image",
    ),
    "not an image": (
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(b"hello").decode()}},
        "You uploaded an unsupported image",
    ),
    "bad detail": (
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG_B64, "detail": "medium"}},
        "Supported values are: 'auto', 'low', and 'high'",
    ),
    "pdf without filename": (
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64," + base64.b64encode(pdf_bytes(1)).decode()},
        },
        "file.filename",
    ),
    "image as file": (
        {"type": "file", "file": {"filename": "x.pdf", "file_data": "data:image/png;base64," + PNG_B64}},
        "application/pdf MIME type",
    ),
}

ANTHROPIC_MALFORMED = {
    "wrong media type": (
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": JPEG_B64}},
        "Image does not match the provided media type image/png",
    ),
    "bad base64": (
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "not*base64!"}},
        "image.source.base64.data",
    ),
    "unsupported media type": (
        {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": PNG_B64}},
        "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
    ),
    "document not a pdf": (
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PNG_B64}},
        "The PDF specified was not valid.",
    ),
    "over 5 MB": (
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * (5 * 1024 * 1024 + 4)}},
        "image exceeds 5 MB maximum",
    ),
}


async def send_raw(protocol: WireProtocol, server: LLMServer, block: dict[str, Any]) -> None:
    """One request with ``block`` in its user message, through the real SDK and aiforge's error mapping."""
    provider = protocol.provider_class(protocol.settings(protocol.base_url(server), MAX_RETRIES=0))
    content = [{"type": "text", "text": "Look:"}, block]
    try:
        if protocol.name == "openai":
            await sdk_call(
                provider,
                lambda client: client.chat.completions.create(
                    model=protocol.model, messages=[{"role": "user", "content": content}]
                ),
            )
        else:
            await sdk_call(
                provider,
                lambda client: client.messages.create(
                    model=protocol.model, max_tokens=16, messages=[{"role": "user", "content": content}]
                ),
            )
    finally:
        await provider.aclose()


@pytest.mark.parametrize("case", sorted(OPENAI_MALFORMED))
async def test_the_fake_rejects_malformed_openai_parts_as_openai_does(srv, case) -> None:
    block, message = OPENAI_MALFORMED[case]
    with pytest.raises(BadRequestError) as caught:
        await send_raw(OPENAI, srv, block)
    assert message in caught.value.message
    assert caught.value.status_code == 400
    error = caught.value.body if "message" in caught.value.body else caught.value.body["error"]
    assert error["type"] == "invalid_request_error" and set(error) == {"message", "type", "param", "code"}


@pytest.mark.parametrize("case", sorted(ANTHROPIC_MALFORMED))
async def test_the_fake_rejects_malformed_anthropic_blocks_as_anthropic_does(srv, case) -> None:
    block, message = ANTHROPIC_MALFORMED[case]
    with pytest.raises(BadRequestError) as caught:
        await send_raw(ANTHROPIC, srv, block)
    assert message in caught.value.message
    assert caught.value.message.startswith("messages.0.content.1.")
    assert caught.value.status_code == 400
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "invalid_request_error"


def test_the_fake_refuses_more_than_100_pdf_pages(srv, tmp_path) -> None:
    first, _ = marked(tmp_path / "long.pdf", pdf_bytes(60, "Report"))
    second, _ = marked(tmp_path / "longer.pdf", pdf_bytes(60, "Annex"))

    with pytest.raises(BadRequestError, match="A maximum of 100 PDF pages may be provided"):
        agent_for(srv, ANTHROPIC).chat(f"Compare {first} with {second}")


# ---------------------------------------------------------------------------
# Every other request built from messages: Batch APIs, prompt caching
# ---------------------------------------------------------------------------


def test_a_batch_api_request_carries_the_same_blocks_as_a_live_call(srv, protocol, tmp_path) -> None:
    marker, read = marked(tmp_path / "receipt.png", image_bytes(120, 90, "JPEG"))
    agent = agent_for(srv, protocol)

    result = agent.submit_batch([f"Total of {marker}"]).wait(poll_interval=0)
    agent.run_batch([f"Total of {marker}"], cache=False)

    assert not result.failed
    batched, live = (dict(r.body) for r in srv.requests)
    batched.pop("stream")  # the fake Batch API runs each request as a live call with stream: false
    assert batched == live
    assert user_content(live)[1] == expected_block(protocol, read)
    assert all(r.status == 200 for r in srv.requests)


async def test_prompt_caching_marks_the_prefix_when_the_last_block_is_an_image(srv, tmp_path) -> None:
    marker, read = marked(tmp_path / "label.png", image_bytes(200, 100, "PNG"))
    system = "You read product labels and answer with the brand. " * 400  # over Haiku 4.5's 4096-token minimum
    messages = [{"role": "system", "content": system}, {"role": "user", "content": f"Which brand? {marker}"}]
    params = CallParams(model=ANTHROPIC.model, prompt_cache=True)
    provider = ANTHROPIC.provider_class(ANTHROPIC.settings(ANTHROPIC.base_url(srv)))
    try:
        first = await provider.complete(messages, None, params)
        second = await provider.complete(messages, None, params)
    finally:
        await provider.aclose()

    body = srv.requests[0].body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][-1] == expected_block(ANTHROPIC, read)
    assert all(r.status == 200 for r in srv.requests)
    assert first.usage.cache_write_tokens > 0
    assert second.usage.cached_input_tokens == first.usage.cache_write_tokens


def test_a_file_over_the_vendors_limit_fails_its_row_before_anything_is_sent(srv, protocol, tmp_path) -> None:
    too_long, _ = marked(tmp_path / "ledger.pdf", pdf_bytes(101, "Ledger"))
    short, _ = marked(tmp_path / "note.pdf", pdf_bytes(1, "Note"))

    result = agent_for(srv, protocol).run_batch([f"Sum {too_long}", f"Sum {short}"], cache=False)

    (failure,) = result.failed
    assert failure.index == 0 and isinstance(failure.error, FileInputError)
    assert "ledger.pdf" in str(failure.error) and "101 pages" in str(failure.error)
    assert len(srv.requests) == 1 and srv.requests[0].status == 200


async def test_a_stream_with_a_gone_file_raises_FileInputError_not_a_provider_error(srv, protocol, tmp_path) -> None:
    marker, _ = marked(tmp_path / "gone.jpg", image_bytes(32, 32, "JPEG"))
    (tmp_path / "gone.jpg").unlink()
    provider = protocol.provider_class(protocol.settings(protocol.base_url(srv)))
    try:
        with pytest.raises(FileInputError, match="gone.jpg"):
            async for _ in provider.stream([{"role": "user", "content": f"See {marker}"}], None, protocol.params):
                pass
    finally:
        await provider.aclose()
    assert srv.requests == []


def test_an_attached_openai_batch_shows_its_files_in_the_inputs(srv, tmp_path) -> None:
    image, _ = marked(tmp_path / "receipt.jpg", image_bytes(64, 64, "JPEG"))
    pdf, _ = marked(tmp_path / "invoice.pdf", pdf_bytes(1))
    job_id = agent_for(srv, OPENAI).submit_batch([f"Compare {image} with {pdf}"]).id

    result = BatchJob.attach(job_id, agent=agent_for(srv, OPENAI)).wait(poll_interval=0)

    assert result.inputs == ["Compare [image] with [invoice.pdf]"]  # read back from the job's input file
    assert not result.failed


def test_a_file_gone_before_a_batch_api_submit_fails_its_row_alone(srv, protocol, tmp_path) -> None:
    kept, _ = marked(tmp_path / "kept.png", image_bytes(64, 48, "PNG"))
    gone, _ = marked(tmp_path / "gone.png", image_bytes(64, 48, "PNG", seed=1))
    changed, _ = marked(tmp_path / "changed.png", image_bytes(64, 48, "PNG", seed=2))
    (tmp_path / "gone.png").unlink()
    (tmp_path / "changed.png").write_bytes(image_bytes(64, 48, "PNG", seed=3))

    prompts = [f"Describe {kept}", f"Describe {gone}", f"Describe {changed}", "Say hi"]
    result = agent_for(srv, protocol).submit_batch(prompts).wait(poll_interval=0)

    assert [r.message for r in result.results] and result.indices == [0, 3]
    errors = {f.position: str(f.error) for f in result.failed}
    assert sorted(errors) == [1, 2] and all(isinstance(f.error, FileInputError) for f in result.failed)
    assert "gone.png: no such file" in errors[1] and "changed.png: the file changed" in errors[2]
    assert len(srv.requests) == 2  # the two good rows were sent and answered; the bad ones never left


def test_a_file_missing_at_prepare_fails_its_batch_api_row_as_a_file_error(srv, protocol, tmp_path) -> None:
    marked(tmp_path / "here.png", image_bytes(64, 48, "PNG"))
    files = [File(tmp_path / "here.png"), File(tmp_path / "absent.png")]

    result = agent_for(srv, protocol).submit_batch(files, prompt="Describe {value}").wait(poll_interval=0)

    assert result.indices == [0] and len(srv.requests) == 1
    (failure,) = result.failed
    assert isinstance(failure.error, FileInputError) and str(failure.error).endswith("absent.png: no such file.")
