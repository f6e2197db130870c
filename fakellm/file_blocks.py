"""Image and document inputs as the vendors define them: strict checks and their input tokens (stdlib only).

OpenAI Chat Completions content parts (images and file inputs guides):
``{"type": "image_url", "image_url": {"url": "https://..." | "data:<image mime>;base64,<b64>",
"detail": "auto|low|high"}}`` (PNG, JPEG, GIF, WebP; up to 50 MB of images and 500 images a request) and
``{"type": "file", "file": {"filename": ..., "file_data": "data:application/pdf;base64,<b64>"} | {"file_id": ...}}``
(PDFs only; up to 100 pages and 32 MB of PDFs a request).

Anthropic Messages blocks (vision and PDF support guides):
``{"type": "image", "source": {"type": "base64", "media_type": "image/png|jpeg|gif|webp", "data": <b64>}}`` (5 MB of
base64 an image, 8000 px a side, 2000 px when a request has more than 20 images, 100 images a request; the bytes must
be the declared type) and ``{"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
"data": <b64>}}`` (100 pages and 32 MB a request).

Errors use the real APIs' wording where it is known (``Image does not match the provided media type image/png``,
``image exceeds 5 MB maximum``, ``A maximum of 100 PDF pages may be provided.``, OpenAI's ``invalid_image_format``).

Tokens, by the published rules (the same tables as ``aiforge.core.file_rules``, recomputed here): OpenAI high detail
fits 2048x2048, scales the short side down to 768 and counts 512-px tiles (85 + 170 a tile on gpt-4o; gpt-4o-mini
2833 + 5667; gpt-5 70 + 140; o1, o3 75 + 150), low detail the base alone, ``auto`` counted as high; gpt-4.1-mini,
gpt-4.1-nano, gpt-5-mini, gpt-5-nano and o4-mini count 32-px patches (at most 1536) times 1.62, 2.46, 1.62, 2.46,
1.72. Anthropic scales the long edge to 1568 px and the area to about 1,600 tokens (1.2 megapixels), then counts
width x height / 750. A PDF page counts its text (the text its content stream shows, characters / 4 rounded up:
close to, not exactly, what a PDF library extracts) plus the page as an image at 150 dpi, counted as high detail.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
import zlib
from typing import Any

from fakellm.wire import _Invalid

OPENAI_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
ANTHROPIC_IMAGE_TYPES = OPENAI_IMAGE_TYPES
OPENAI_MAX_IMAGE_BYTES = 50 * 1024 * 1024
OPENAI_MAX_IMAGES = 500
ANTHROPIC_MAX_IMAGE_BASE64 = 5 * 1024 * 1024
ANTHROPIC_MAX_SIDE = 8000
ANTHROPIC_MANY_IMAGES = 20
ANTHROPIC_MANY_IMAGES_SIDE = 2000
ANTHROPIC_MAX_IMAGES = 100
MAX_PDF_PAGES = 100
MAX_PDF_BYTES = 32 * 1024 * 1024
PAGE_DPI = 150
"""The resolution a PDF page is counted at as an image (neither vendor publishes one; aiforge's estimate assumes it)."""
_DATA_URL = re.compile(r"data:([^;,]*)(;base64)?,(.*)", re.S)
_PATCH_MODELS = {"gpt-4.1-mini": 1.62, "gpt-4.1-nano": 2.46, "gpt-5-mini": 1.62, "gpt-5-nano": 2.46, "o4-mini": 1.72}
_TILE_MODELS = {
    "gpt-4o-mini": (2833, 5667),
    "gpt-4o": (85, 170),
    "gpt-4.1": (85, 170),
    "gpt-4.5": (85, 170),
    "gpt-5": (70, 140),
    "o1": (75, 150),
    "o3": (75, 150),
    "computer-use-preview": (65, 129),
}


# --------------------------------------------------------------------------- bytes


def sniff(data: bytes) -> str | None:
    """The image or PDF type ``data`` is by its leading bytes."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if b"%PDF-" in data[:1024]:
        return "application/pdf"
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from an image's header, or None when it cannot be read."""
    try:
        kind = sniff(data)
        if kind == "image/png":
            return struct.unpack(">II", data[16:24])
        if kind == "image/gif":
            return struct.unpack("<HH", data[6:10])
        if kind == "image/webp":
            chunk = data[12:16]
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", data[26:30])
                return w & 0x3FFF, h & 0x3FFF
            if chunk == b"VP8L":
                bits = int.from_bytes(data[21:25], "little")
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            if chunk == b"VP8X":
                return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
            return None
        if kind == "image/jpeg":
            at = 2
            while at + 9 < len(data):
                if data[at] != 0xFF:
                    return None
                marker = data[at + 1]
                length = struct.unpack(">H", data[at + 2 : at + 4])[0]
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    h, w = struct.unpack(">HH", data[at + 5 : at + 9])
                    return w, h
                at += 2 + length
    except struct.error:
        return None
    return None


def _decode(text: Any) -> bytes | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_BOX = re.compile(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]")
_STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.S)
_SHOWN = re.compile(rb"\((.*?)(?<!\\)\)\s*Tj|\[(.*?)\]\s*TJ", re.S)


def pdf_pages(data: bytes) -> list[tuple[float, float]]:
    """Each page's size in points (its MediaBox, else US letter); [] when ``data`` is no PDF."""
    if sniff(data) != "application/pdf":
        return []
    boxes = [(float(c) - float(a), float(d) - float(b)) for a, b, c, d in _BOX.findall(data)]
    count = len(_PAGE.findall(data))
    return [boxes[min(i, len(boxes) - 1)] if boxes else (612.0, 792.0) for i in range(count)]


def pdf_text_tokens(data: bytes) -> int:
    """The text shown by each content stream of the PDF (a page's, compressed or not), characters / 4 rounded up."""
    tokens = 0
    for raw in _STREAM.findall(data):
        try:
            stream = zlib.decompress(raw)
        except zlib.error:
            stream = raw
        chars = 0
        for single, array in _SHOWN.findall(stream):
            shown = single or b"".join(re.findall(rb"\((.*?)(?<!\\)\)", array, re.S))
            chars += len(shown)
        tokens += -(-chars // 4)
    return tokens


# --------------------------------------------------------------------------- tokens


def _fitted(width: int, height: int, max_side: float, max_pixels: float | None = None, short: float | None = None):
    """``(width, height)`` scaled down (never up), keeping its shape, to the limits given (floored)."""
    scale = min(1.0, max_side / max(width, height))
    if max_pixels is not None:
        scale = min(scale, math.sqrt(max_pixels / (width * height)))
    if short is not None:
        scale = min(scale, short / min(width, height))
    return (width, height) if scale >= 1.0 else (max(1, math.floor(width * scale)), max(1, math.floor(height * scale)))


def _by_prefix(table: dict, model: str) -> Any:
    name = model.lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in table if name == prefix or name.startswith(prefix + "-")]
    return table[max(matches, key=len)] if matches else None


def openai_image_tokens(width: int, height: int, detail: str, model: str) -> int:
    """Tile models: fit 2048 x 2048, short side down to 768, ``base + tile * tiles`` (low: ``base``); patch models:
    32-px patches (at most 1536, the image scaled down to fit) times the model's multiplier."""
    multiplier = _by_prefix(_PATCH_MODELS, model)
    if multiplier is not None:
        if math.ceil(width / 32) * math.ceil(height / 32) > 1536:
            ratio = math.sqrt(32 * 32 * 1536 / (width * height))
            ratio *= min(
                math.floor(width * ratio / 32) / (width * ratio / 32),
                math.floor(height * ratio / 32) / (height * ratio / 32),
            )
            width, height = math.floor(width * ratio), math.floor(height * ratio)
        return math.ceil(min(1536, math.ceil(width / 32) * math.ceil(height / 32)) * multiplier)
    base, tile = _by_prefix(_TILE_MODELS, model) or (85, 170)
    if detail == "low":
        return base
    w, h = _fitted(width, height, 2048, None, 768)
    return base + tile * math.ceil(w / 512) * math.ceil(h / 512)


def anthropic_image_tokens(width: int, height: int) -> int:
    """Long edge down to 1568 px and the area to about 1,600 tokens, then width x height / 750."""
    w, h = _fitted(width, height, 1568, 1600 * 750)
    return math.ceil(w * h / 750)


def _page_pixels(width_pt: float, height_pt: float) -> tuple[int, int]:
    return max(1, round(width_pt * PAGE_DPI / 72)), max(1, round(height_pt * PAGE_DPI / 72))


def pdf_tokens(data: bytes, image_tokens: Any) -> int:
    """A PDF's input tokens: its text, and an image of each page counted by ``image_tokens(width, height)``."""
    return pdf_text_tokens(data) + sum(image_tokens(*_page_pixels(*page)) for page in pdf_pages(data))


def file_tokens(body: Any) -> int:
    """The input tokens of every image and document part or block in a request's messages."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return 0
    model = str(body.get("model") or "")
    total = 0
    for message in body["messages"]:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            total += _part_tokens(part, model) if isinstance(part, dict) else 0
    return total


def _part_tokens(part: dict, model: str) -> int:
    kind = part.get("type")
    if kind == "image_url":
        spec = part.get("image_url") or {}
        data = _data_url_bytes(spec.get("url"))
        size = image_size(data) if data else None
        return openai_image_tokens(*size, spec.get("detail") or "auto", model) if size else 0
    if kind == "file":
        data = _data_url_bytes((part.get("file") or {}).get("file_data"))
        return pdf_tokens(data, lambda w, h: openai_image_tokens(w, h, "high", model)) if data else 0
    source = part.get("source") if isinstance(part.get("source"), dict) else {}
    data = _decode(source.get("data")) if source.get("type") == "base64" else None
    if kind == "image" and data:
        size = image_size(data)
        return anthropic_image_tokens(*size) if size else 0
    if kind == "document" and data:
        return pdf_tokens(data, anthropic_image_tokens)
    return 0


def _data_url_bytes(url: Any) -> bytes | None:
    match = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
    return _decode(match.group(3)) if match and match.group(2) else None


# --------------------------------------------------------------------------- OpenAI checks


def validate_openai_parts(messages: list) -> None:
    """Check every content part of ``messages`` as Chat Completions does; ``_Invalid`` at the first wrong one."""
    image_bytes = images = pages = pdf_bytes = 0
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            where = f"messages[{i}].content[{j}]"
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                if not isinstance(part.get("text"), str):
                    raise _Invalid(f"Invalid type for '{where}.text': expected a string.", f"{where}.text")
            elif kind == "image_url":
                images += 1
                image_bytes += _openai_image(part, where)
            elif kind == "file":
                size, count = _openai_file(part, where)
                pdf_bytes, pages = pdf_bytes + size, pages + count
            else:
                raise _Invalid(
                    f"Invalid value: '{kind}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', "
                    f"'audio', and 'file'.",
                    f"{where}.type",
                )
    if images > OPENAI_MAX_IMAGES:
        raise _Invalid(f"Too many images in request. Max is {OPENAI_MAX_IMAGES}.", "messages")
    if image_bytes > OPENAI_MAX_IMAGE_BYTES:
        raise _Invalid("Total image size in the request exceeds the 50 MB limit.", "messages")
    if pages > MAX_PDF_PAGES or pdf_bytes > MAX_PDF_BYTES:
        raise _Invalid(
            f"Invalid request: the PDFs in this request have {pages} pages and {pdf_bytes} bytes; at most "
            f"{MAX_PDF_PAGES} pages and 32 MB of PDFs may be provided.",
            "messages",
        )


def _openai_image(part: dict, where: str) -> int:
    spec = part.get("image_url")
    url = spec.get("url") if isinstance(spec, dict) else None
    if not isinstance(url, str):
        raise _Invalid(f"Missing required parameter: '{where}.image_url.url'.", f"{where}.image_url.url")
    detail = spec.get("detail", "auto")
    if detail not in ("auto", "low", "high"):
        raise _Invalid(
            f"Invalid value: '{detail}'. Supported values are: 'auto', 'low', and 'high'.", f"{where}.image_url.detail"
        )
    if url.startswith("https://"):
        return 0
    match = _DATA_URL.fullmatch(url)
    data = _decode(match.group(3)) if match and match.group(2) else None
    if match is None or data is None or not match.group(1).startswith("image/"):
        raise _Invalid(
            f"Invalid '{where}.image_url.url'. Expected a base64-encoded data URL with an image MIME type (e.g. "
            f"'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got an invalid base64-encoded data URL.",
            f"{where}.image_url.url",
            code="invalid_value",
        )
    if match.group(1) not in OPENAI_IMAGE_TYPES or sniff(data) not in OPENAI_IMAGE_TYPES or image_size(data) is None:
        raise _Invalid(
            "You uploaded an unsupported image. Please make sure your image has of one the following formats: "
            "['png', 'jpeg', 'gif', 'webp'].",
            code="invalid_image_format",
        )
    return len(data)


def _openai_file(part: dict, where: str) -> tuple[int, int]:
    spec = part.get("file")
    if not isinstance(spec, dict) or not (spec.get("file_data") or spec.get("file_id")):
        raise _Invalid(
            f"Missing required parameter: one of '{where}.file.file_data' or '{where}.file.file_id'.", f"{where}.file"
        )
    if spec.get("file_id"):
        return 0, 0
    if not isinstance(spec.get("filename"), str) or not spec["filename"]:
        raise _Invalid(f"Missing required parameter: '{where}.file.filename'.", f"{where}.file.filename")
    match = _DATA_URL.fullmatch(spec["file_data"]) if isinstance(spec["file_data"], str) else None
    data = _decode(match.group(3)) if match and match.group(2) else None
    if match is None or data is None or match.group(1) != "application/pdf":
        got = f"unsupported MIME type '{match.group(1)}'" if match and data is not None else "an invalid data URL"
        raise _Invalid(
            f"Invalid '{where}.file.file_data'. Expected a base64-encoded data URL with an application/pdf MIME type "
            f"(e.g. 'data:application/pdf;base64,SGVsbG8sIFdvcmxkIQ=='), but got {got}.",
            f"{where}.file.file_data",
            code="invalid_value",
        )
    pages = pdf_pages(data)
    if not pages:
        raise _Invalid(f"The file '{spec['filename']}' is not a valid PDF.", f"{where}.file.file_data")
    return len(data), len(pages)


# --------------------------------------------------------------------------- Anthropic checks


def validate_anthropic_blocks(messages: list) -> None:
    """Check every image and document block of ``messages`` as the Messages API does."""
    found = [
        (i, j, block)
        for i, message in enumerate(messages)
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for j, block in enumerate(message["content"])
        if isinstance(block, dict) and block.get("type") in ("image", "document")
    ]
    images = sum(block["type"] == "image" for _, _, block in found)
    if images > ANTHROPIC_MAX_IMAGES:
        raise _Invalid(f"messages: Too many images: {images} > {ANTHROPIC_MAX_IMAGES}")
    side = ANTHROPIC_MANY_IMAGES_SIDE if images > ANTHROPIC_MANY_IMAGES else ANTHROPIC_MAX_SIDE
    pages = pdf_bytes = 0
    for i, j, block in found:
        if messages[i].get("role") != "user":
            raise _Invalid(f"messages.{i}.content.{j}: {block['type']} blocks are only allowed in user messages")
        if block["type"] == "image":
            _anthropic_image(block, f"messages.{i}.content.{j}.image.source", side)
        else:
            data = _anthropic_document(block, f"messages.{i}.content.{j}")
            count = len(pdf_pages(data)) if data else 0
            pages, pdf_bytes = pages + count, pdf_bytes + len(data or b"")
            if pages > MAX_PDF_PAGES:
                raise _Invalid(
                    f"messages.{i}.content.{j}.pdf.source.base64.data: A maximum of {MAX_PDF_PAGES} PDF pages may be "
                    f"provided."
                )
    if pdf_bytes > MAX_PDF_BYTES:
        raise _Invalid("Request exceeds the maximum allowed number of bytes.", status=413)


def _source(block: dict, where: str) -> dict:
    source = block.get("source")
    if not isinstance(source, dict):
        raise _Invalid(f"{where}: Field required")
    if source.get("type") not in ("base64", "url", "file") + (("text",) if block["type"] == "document" else ()):
        raise _Invalid(f"{where}.type: Input should be 'base64', 'url' or 'file'")
    return source


def _anthropic_image(block: dict, where: str, max_side: int) -> None:
    source = _source(block, where)
    if source["type"] != "base64":
        return
    media_type = source.get("media_type")
    if media_type not in ANTHROPIC_IMAGE_TYPES:
        raise _Invalid(
            f"{where}.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
        )
    text = source.get("data")
    if isinstance(text, str) and len(text) > ANTHROPIC_MAX_IMAGE_BASE64:
        raise _Invalid(
            f"{where}.base64: image exceeds 5 MB maximum: {len(text)} bytes > {ANTHROPIC_MAX_IMAGE_BASE64} bytes"
        )
    data = _decode(text)
    if data is None:
        raise _Invalid(f"{where}.base64.data: Invalid base64 data")
    if sniff(data) != media_type:
        raise _Invalid(f"{where}.base64.data: Image does not match the provided media type {media_type}")
    size = image_size(data)
    if size is None:
        raise _Invalid(f"{where}.base64.data: Could not process image")
    if max(size) > max_side:
        many = " for many-image requests" if max_side == ANTHROPIC_MANY_IMAGES_SIDE else ""
        raise _Invalid(
            f"{where}.base64.data: At least one of the image dimensions exceed max allowed size{many}: "
            f"{max_side} pixels"
        )


def _anthropic_document(block: dict, where: str) -> bytes | None:
    source = _source(block, f"{where}.document.source")
    if source["type"] == "text":
        if source.get("media_type") != "text/plain" or not isinstance(source.get("data"), str):
            raise _Invalid(f"{where}.document.source.text.media_type: Input should be 'text/plain'")
        return None
    if source["type"] != "base64":
        return None
    if source.get("media_type") != "application/pdf":
        raise _Invalid(f"{where}.document.source.base64.media_type: Input should be 'application/pdf'")
    data = _decode(source.get("data"))
    if data is None:
        raise _Invalid(f"{where}.document.source.base64.data: Invalid base64 data")
    if not pdf_pages(data):
        raise _Invalid(f"{where}.pdf.source.base64.data: The PDF specified was not valid.")
    return data
