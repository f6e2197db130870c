"""A user message's file markers as the vendors' own content blocks, at the last moment before a request goes out.

A file in a row enters its prompt as a marker, ``[[file:<digest>]]`` (``core.files``); the text stays a ``str``
everywhere else. The wire modules call these functions while building a request: the text is cut at its markers
(``split_markers``, which reads each file again and checks it is the one the marker names), every file becomes
what ``core.file_rules.wire_file`` says is sent (an image resized for the vendor, limits checked), and the pieces
keep the user's order; text between files becomes text parts. A text without markers is sent exactly as before.

The shapes are the vendors' published ones:

* OpenAI Chat Completions (``openai``, ``internal_gateway``, local servers): ``{"type": "image_url", "image_url":
  {"url": "data:<mime>;base64,...", "detail": "auto|low|high"}}`` (images guide) and ``{"type": "file", "file":
  {"filename": ..., "file_data": "data:application/pdf;base64,..."}}`` (file inputs guide: PDFs only).
* Anthropic Messages: ``{"type": "image", "source": {"type": "base64", "media_type": ..., "data": ...}}`` (vision
  guide) and ``{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": ...}}``
  (PDF support guide). Anthropic suggests images before the text; the user's order is kept, as it may matter.

Text pieces holding only whitespace (the line break between two files) are dropped: Anthropic rejects a text block
without non-whitespace text, and they carry nothing. A missing or changed file raises ``FileInputError`` from here,
before anything is sent; the provider does not catch it, so it fails that call (that row) as itself.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

from aiforge.core.file_markers import has_markers, split_markers
from aiforge.core.files import ReadFile

Detail = Literal["auto", "low", "high"]


def _pieces(text: str) -> list[str | ReadFile]:
    return [piece for piece in split_markers(text) if not isinstance(piece, str) or piece.strip()]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def openai_content(text: str, detail: Detail = "auto", model: str | None = None) -> str | list[dict[str, Any]]:
    """A user message's content for Chat Completions: ``text`` itself, or its parts when it holds file markers
    (images at the size ``model`` reads)."""
    if not has_markers(text):
        return text
    from aiforge.core.file_rules import wire_file

    parts: list[dict[str, Any]] = []
    for piece in _pieces(text):
        if isinstance(piece, str):
            parts.append({"type": "text", "text": piece})
            continue
        sent = wire_file(piece, "openai", detail, model)
        if sent.kind == "pdf":
            data_url = f"data:application/pdf;base64,{_b64(sent.data)}"
            parts.append({"type": "file", "file": {"filename": sent.name, "file_data": data_url}})
        else:
            data_url = f"data:{sent.mime};base64,{_b64(sent.data)}"
            parts.append({"type": "image_url", "image_url": {"url": data_url, "detail": detail}})
    return parts


def anthropic_blocks(text: str) -> list[dict[str, Any]]:
    """A user message's content blocks for the Messages API: one text block, or its pieces around file markers."""
    if not has_markers(text):
        return [{"type": "text", "text": text}] if text else []
    from aiforge.core.file_rules import wire_file

    blocks: list[dict[str, Any]] = []
    for piece in _pieces(text):
        if isinstance(piece, str):
            blocks.append({"type": "text", "text": piece})
            continue
        sent = wire_file(piece, "anthropic")
        kind = "document" if sent.kind == "pdf" else "image"
        source = {"type": "base64", "media_type": sent.mime, "data": _b64(sent.data)}
        blocks.append({"type": kind, "source": source})
    return blocks


def content_text(content: Any) -> str:
    """A message content read back as text (a Batch API's stored inputs): a file part as ``[image]`` / ``[<name>]``."""
    if isinstance(content, str) or content is None:
        return content or ""
    shown = []
    for part in content if isinstance(content, list) else []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            shown.append(str(part.get("text") or ""))
        elif kind == "file":
            shown.append(f"[{(part.get('file') or {}).get('filename') or 'file'}]")
        elif kind in ("image_url", "image", "document"):
            shown.append(f"[{'document' if kind == 'document' else 'image'}]")
    return "".join(shown)
