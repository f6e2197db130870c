"""The vendors' published rules for files, as data: how many input tokens an image or a PDF page costs, the size an
image is read at, the limits per image and per PDF, and ``wire_file``, what is actually sent.

Sources (as published by the vendors; a change there is a change here):

- OpenAI, "Images and vision", *Calculating costs* (platform.openai.com/docs/guides/images-vision): tile models fit the
  image in 2048 x 2048, scale its shortest side down to 768, and count ``base + tile * (512-px tiles)`` at high detail,
  ``base`` at low (the model reads a 512 x 512 version); patch models count 32-px patches (at most 1536, the image
  scaled down to fit) times a multiplier. *Image input requirements*: PNG, JPEG, WebP, non-animated GIF; up to 50 MB
  payload and 500 images per request.
- OpenAI, "File inputs" (platform.openai.com/docs/guides/pdf-files): up to 100 pages and 32 MB per request; each page
  is read as its extracted text and an image of the page.
- Anthropic, "Vision" (docs.anthropic.com/en/docs/build-with-claude/vision): ``tokens = width * height / 750``; an
  image whose long edge is over 1568 px or that is over about 1,600 tokens is scaled down first (its table: 1092 x 1092
  for 1:1, about 1,590 tokens); 5 MB per image, 8000 x 8000 px, 100 images per request.
- Anthropic, "PDF support" (docs.anthropic.com/en/docs/build-with-claude/pdf-support): 32 MB and 100 pages per
  request; each page costs its text and the page as an image (1,500 to 3,000 tokens a page in their estimate).

Neither vendor says at what resolution a PDF page is rendered; ``PAGE_DPI`` assumes 150 dpi, at which an A4 or Letter
page is at least as large as each vendor reads an image, so the page costs what the largest image of its shape does.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal, TypeVar

from aiforge.core.errors import FileInputError
from aiforge.core.files import FileKind, ReadFile
from aiforge.core.images import SENT_AS_IS, fitted_size, image_size, jpeg_copy, resized_image, shown_as_stored
from aiforge.core.pdfs import pdf_page_facts, pdf_pages
from aiforge.core.tokens import estimate_tokens

Rules = Literal["openai", "anthropic"]
Detail = Literal["auto", "low", "high"]

MB = 1024 * 1024
PAGE_DPI = 150
"""Resolution a PDF page is assumed to be rendered at, as an image, by the vendor (neither publishes it)."""

OPENAI_TILE_TOKENS: dict[str, tuple[int, int]] = {
    # (base tokens, tokens per 512-px tile), by model name prefix; the longest matching prefix wins.
    "gpt-4o-mini": (2833, 5667),
    "gpt-4o": (85, 170),
    "gpt-4.1": (85, 170),
    "gpt-4.5": (85, 170),
    "gpt-5": (70, 140),
    "o1": (75, 150),
    "o3": (75, 150),
    "computer-use-preview": (65, 129),
}
OPENAI_DEFAULT_TILE_TOKENS = (85, 170)
"""A model the table does not name is counted as gpt-4o."""
OPENAI_PATCH_MULTIPLIERS: dict[str, float] = {
    "gpt-4.1-mini": 1.62,
    "gpt-4.1-nano": 2.46,
    "gpt-5-mini": 1.62,
    "gpt-5-nano": 2.46,
    "o4-mini": 1.72,
}
OPENAI_PATCH = 32
OPENAI_MAX_PATCHES = 1536
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_SIDE = 1568
ANTHROPIC_MAX_PIXELS = 1600 * ANTHROPIC_PIXELS_PER_TOKEN
"""About 1,600 tokens: 1.2 megapixels (1092 x 1092 is sent as is, as Anthropic's table says)."""


@dataclass(frozen=True, slots=True)
class FileLimits:
    """What one request may carry, as the vendor publishes it."""

    image_bytes: int
    """Bytes of one image (base64 makes it a third larger on the wire)."""
    image_side: int | None
    """Pixels of an image's longest side (None: no published limit; the image is scaled down, not refused)."""
    images_per_request: int
    pdf_bytes: int
    """Bytes of the PDFs of one request."""
    pdf_pages: int
    """Pages of the PDFs of one request."""


LIMITS: dict[Rules, FileLimits] = {
    "openai": FileLimits(
        image_bytes=50 * MB, image_side=None, images_per_request=500, pdf_bytes=32 * MB, pdf_pages=100
    ),
    # Anthropic's 5 MB per image applied to the base64 text, to be safe whichever it measures: 3.75 MB of image.
    "anthropic": FileLimits(
        image_bytes=5 * MB * 3 // 4, image_side=8000, images_per_request=100, pdf_bytes=32 * MB, pdf_pages=100
    ),
}

_V = TypeVar("_V")

VENDOR_NAMES: dict[Rules, str] = {"openai": "OpenAI", "anthropic": "Anthropic"}


@dataclass(frozen=True, slots=True, repr=False)
class WireFile:
    """A file as it is sent: an image resized to what the vendor reads, or a PDF as it is."""

    kind: FileKind
    mime: str
    data: bytes
    name: str

    def __repr__(self) -> str:
        return f"WireFile({self.kind}, {self.mime}, {len(self.data)} bytes, name={self.name!r})"


def read_size(rules: Rules, detail: Detail = "auto") -> tuple[int | None, int | None, int | None]:
    """``(max_side, max_pixels, short_side)`` of the image the vendor's tile rule reads (``images.fitted_size``'s
    arguments): Anthropic's, or OpenAI's tile models' at ``detail``."""
    if rules == "anthropic":
        return ANTHROPIC_MAX_SIDE, ANTHROPIC_MAX_PIXELS, None
    if detail == "low":
        return 512, None, None
    return 2048, None, 768


def sent_image_size(
    width: int, height: int, rules: Rules, detail: Detail = "auto", model: str | None = None
) -> tuple[int, int]:
    """The size aiforge sends an image of ``width`` x ``height`` at: what the vendor reads of it, never larger.

    For OpenAI at high detail, what ``model`` reads: a patch model (gpt-4.1-mini, o4-mini ...) 1536 patches of 32 px,
    any other model 2048 x 2048 with its shortest side at 768 (its tiles). With no model named, the larger of the
    two, so either kind reads the image as it would the original.
    """
    tiles = fitted_size(width, height, *read_size(rules, detail))
    if rules == "anthropic" or detail == "low":
        return tiles
    patch_model = _by_prefix(OPENAI_PATCH_MULTIPLIERS, model) is not None
    if model is not None:
        return _patch_read_size(width, height) if patch_model else tiles
    patches = _patch_read_size(width, height)
    return patches if patches[0] * patches[1] > tiles[0] * tiles[1] else tiles


def image_tokens(width: int, height: int, rules: Rules, model: str | None, detail: Detail = "auto") -> int:
    """Input tokens of a ``width`` x ``height`` image by the vendor's published rule (``detail="auto"`` is counted as
    high: the most the vendor may charge)."""
    if rules == "anthropic":
        sent_w, sent_h = fitted_size(width, height, ANTHROPIC_MAX_SIDE, ANTHROPIC_MAX_PIXELS)
        return math.ceil(sent_w * sent_h / ANTHROPIC_PIXELS_PER_TOKEN)
    multiplier = _by_prefix(OPENAI_PATCH_MULTIPLIERS, model)
    if multiplier is not None:
        return math.ceil(_patches(width, height) * multiplier)
    base, per_tile = _by_prefix(OPENAI_TILE_TOKENS, model) or OPENAI_DEFAULT_TILE_TOKENS
    if detail == "low":
        return base
    tile_w, tile_h = fitted_size(width, height, 2048, None, 768)
    return base + per_tile * math.ceil(tile_w / 512) * math.ceil(tile_h / 512)


def pdf_page_tokens(text_tokens: int, page_w_pt: float, page_h_pt: float, rules: Rules, model: str | None) -> int:
    """Input tokens of one PDF page: its text, plus the page as an image rendered at ``PAGE_DPI`` (both vendors read
    a page as both), at high detail."""
    width = max(1, round(page_w_pt * PAGE_DPI / 72))
    height = max(1, round(page_h_pt * PAGE_DPI / 72))
    return text_tokens + image_tokens(width, height, rules, model, "high")


def file_tokens(read: ReadFile, rules: Rules, model: str | None, detail: Detail = "auto") -> int:
    """Input tokens of a file as ``wire_file`` sends it: an image at its sent size, or every page of a PDF (its text
    estimated with ``tokens.estimate_tokens``)."""
    if read.kind == "image":
        width, height = sent_image_size(*image_size(read.data, read.name), rules, detail, model)
        return image_tokens(width, height, rules, model, detail)
    return sum(
        pdf_page_tokens(estimate_tokens(text), width, height, rules, model)
        for text, width, height in pdf_page_facts(read.data, read.name)
    )


@functools.lru_cache(maxsize=4096)
def marker_tokens(digest: str, rules: Rules, model: str | None, detail: Detail = "auto") -> int:
    """Input tokens of the file a marker names (``file_tokens`` by ``rules`` on ``model``), by content, so once per
    distinct file in the process; 0 when the file is gone or changed (its row fails when sent, at no cost)."""
    from aiforge.core.file_markers import reread

    try:
        return int(file_tokens(reread(digest), rules, model, detail))
    except FileInputError:
        return 0


def wire_file(read: ReadFile, rules: Rules, detail: Detail = "auto", model: str | None = None) -> WireFile:
    """What is sent for ``read``: an image scaled down to what the vendor's ``model`` reads (BMP and TIFF as PNG, the
    original bytes when they already fit, or when scaled down it would be more bytes and the vendor takes the
    original: it scales it to the same size), a PDF as it is; ``FileInputError`` naming the file, the limit and the fix
    when it is over one of the vendor's limits."""
    limits, vendor = LIMITS[rules], VENDOR_NAMES[rules]
    if read.kind == "pdf":
        if len(read.data) > limits.pdf_bytes:
            raise FileInputError(
                f"{read.name}: {_mb(len(read.data))}, over {vendor}'s {_mb(limits.pdf_bytes)} of PDF a request; "
                "split it into smaller PDFs (by pages) or send its text (FILE_INPUT='text')."
            )
        pages = pdf_pages(read.data, read.name)
        if pages > limits.pdf_pages:
            raise FileInputError(
                f"{read.name}: {pages} pages, over {vendor}'s {limits.pdf_pages} pages a request; split it into "
                f"parts of at most {limits.pdf_pages} pages or send its text (FILE_INPUT='text')."
            )
        return WireFile("pdf", read.mime, read.data, read.name)

    def fit(width: int, height: int) -> tuple[int, int]:
        return sent_image_size(width, height, rules, detail, model)

    data, mime = resized_image(read.data, read.mime, read.name, None, fit=fit)
    if len(data) >= len(read.data) and data is not read.data and _sendable_as_is(read, limits):
        # Re-encoded, it grew (a 1-bit scan, a low-quality JPEG): the vendor is sent the original and scales it to
        # the same size itself, so it reads, and is charged for, what file_tokens counts.
        data, mime = read.data, read.mime
    elif len(data) >= len(read.data) and read.mime not in SENT_AS_IS:
        # A BMP or TIFF that grew (a fax in 1 bit): as a PNG of its full size, when that is smaller and within limits.
        whole, whole_mime = resized_image(read.data, read.mime, read.name, None)
        if len(whole) < len(data) and _within(whole, read.name, limits):
            data, mime = whole, whole_mime
    if len(data) > limits.image_bytes and mime != "image/jpeg":
        data, mime = jpeg_copy(data, read.name), "image/jpeg"
    if len(data) > limits.image_bytes:
        raise FileInputError(
            f"{read.name}: {_mb(len(data))} once resized, over {vendor}'s {_mb(limits.image_bytes)} an image; "
            "save it at a lower JPEG quality and use that."
        )
    if limits.image_side is not None and max(image_size(data, read.name)) > limits.image_side:
        raise FileInputError(
            f"{read.name}: over {vendor}'s {limits.image_side} pixels a side; scale it down and use that."
        )
    return WireFile("image", mime, data, read.name)


def _sendable_as_is(read: ReadFile, limits: FileLimits) -> bool:
    """Whether the vendor takes ``read``'s own bytes: a kind it reads, within its bytes and pixels, one frame shown
    as stored."""
    return read.mime in SENT_AS_IS and _within(read.data, read.name, limits) and shown_as_stored(read.data, read.name)


def _within(data: bytes, name: str, limits: FileLimits) -> bool:
    """Whether an image of ``data`` is within the vendor's bytes and pixels a side."""
    if len(data) > limits.image_bytes:
        return False
    return limits.image_side is None or max(image_size(data, name)) <= limits.image_side


def _patches(width: int, height: int) -> int:
    """OpenAI's patch count: 32-px patches covering the image, scaled down to fit ``OPENAI_MAX_PATCHES`` first."""
    width, height = _patch_read_size(width, height)
    return min(OPENAI_MAX_PATCHES, math.ceil(width / OPENAI_PATCH) * math.ceil(height / OPENAI_PATCH))


def _patch_read_size(width: int, height: int) -> tuple[int, int]:
    """The size OpenAI's patch models read an image at: as it is, or scaled down to fit 1536 patches."""
    if math.ceil(width / OPENAI_PATCH) * math.ceil(height / OPENAI_PATCH) > OPENAI_MAX_PATCHES:
        ratio = math.sqrt(OPENAI_PATCH**2 * OPENAI_MAX_PATCHES / (width * height))
        # Then shrunk so a whole number of patches spans the width or the height, as the published steps do.
        ratio *= min(
            math.floor(width * ratio / OPENAI_PATCH) / (width * ratio / OPENAI_PATCH),
            math.floor(height * ratio / OPENAI_PATCH) / (height * ratio / OPENAI_PATCH),
        )
        # A hair under a whole patch count (float error) rounds to it, as the docs' arithmetic does.
        width, height = max(1, math.floor(width * ratio + 1e-6)), max(1, math.floor(height * ratio + 1e-6))
    return width, height


def _by_prefix(table: dict[str, _V], model: str | None) -> _V | None:
    """The entry of the longest prefix of ``model`` (its provider prefix, ``openai/``, dropped) in ``table``."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in table if name == prefix or name.startswith(prefix + "-")]
    return table[max(matches, key=len)] if matches else None


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB"
