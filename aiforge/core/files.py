"""Files as inputs: a PDF or an image in a column, asked about like a column of text.

A row's file enters its prompt as a *marker*, ``[[file:<digest>]]``, where ``<digest>`` is the first 32 hex digits of
the SHA-256 of the file's bytes. Everything that works on prompt texts (a batch's identity and checkpoint, the
response cache, the repeats a batch asks once) therefore works on the file's content, not on its name: the same
file under two names is one prompt, and a changed file at the same path is a new one. The vendor wire modules
turn each marker back into the provider's own block (``core.file_markers.split_markers``, ``wire_file``).

Files are read when a batch builds its prompts (on the Dask worker that builds them, for a partition), and again
when a request is sent: nothing holds a path's bytes in between, and a file changed in between fails its row
rather than sending other bytes than the ones the prompt was keyed by.

PDF and image specifics (pages, text, pixels, resizing) live in ``core.pdfs`` and ``core.images``, which import pypdf
and Pillow (the ``documents`` extra) on first use; the providers' token rules and limits, and ``wire_file`` (what is
sent for a file), in ``core.file_rules``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aiforge.core.errors import FileInputError, UsageError

FileKind = Literal["pdf", "image"]


_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
)
"""Leading bytes -> MIME type (WebP is RIFF....WEBP, checked apart)."""


def sniff_mime(data: bytes) -> str | None:
    """The MIME type ``data``'s leading bytes say, or None for a kind aiforge does not read."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    head = data[:1024]
    # A PDF may start with junk before its header (the format allows it within the first 1024 bytes).
    if b"%PDF-" in head:
        return "application/pdf"
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    return None


def kind_of(mime: str) -> FileKind:
    return "pdf" if mime == "application/pdf" else "image"


class File:
    """A document or image to put in a prompt: a path (read when needed) or bytes held in memory.

    ``File("invoices/001.pdf")``, ``File(png_bytes, name="scan.png")``, or a PIL image (kept as PNG bytes).
    A column of ``File``, ``pathlib.Path``, ``bytes`` or PIL images is a file column; a column of plain strings is
    text unless the operation is told it holds paths (``files=["invoice"]``).
    """

    __slots__ = ("path", "name", "_data", "__weakref__")

    def __init__(self, source: str | os.PathLike[str] | bytes | bytearray | Any, name: str | None = None) -> None:
        self._data: bytes | None = None
        self.path: Path | None = None
        if isinstance(source, File):
            self.path, self._data = source.path, source._data
            self.name: str = name or source.name
            return
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._data = bytes(source)
            self.name = name or "file"
        elif isinstance(source, (str, os.PathLike)):
            self.path = Path(source).expanduser()
            self.name = name or self.path.name
        elif _is_pil_image(source):
            self._data = _pil_png(source)
            self.name = name or (Path(str(getattr(source, "filename", "") or "image.png")).stem + ".png")
        else:
            raise UsageError(f"File() takes a path, bytes or a PIL image, got {type(source).__name__}.")

    def read(self) -> bytes:
        """The file's bytes: read from its path each time (so a changed file is seen), or the bytes it holds."""
        if self._data is not None:
            return self._data
        assert self.path is not None
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            raise FileInputError(f"{self.path}: no such file.") from None
        except IsADirectoryError:
            raise FileInputError(f"{self.path}: a folder, not a file.") from None
        except OSError as exc:
            raise FileInputError(f"{self.path}: cannot be read ({exc.strerror or exc}).") from None

    def __repr__(self) -> str:
        if self.path is not None:
            shown = repr(str(self.path))
            return f"File({shown})" if self.name == self.path.name else f"File({shown}, name={self.name!r})"
        return f"File(<{len(self._data or b'')} bytes>, name={self.name!r})"

    def __str__(self) -> str:
        """Its path when it has one (so a column Dask turns into strings still holds paths, for ``files=``), else
        its name."""
        return self.name if self.path is None else str(self.path)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, File):
            return NotImplemented
        return (self.path, self._data, self.name) == (other.path, other._data, other.name)

    def __hash__(self) -> int:
        return hash((self.path, self.name, None if self._data is None else len(self._data)))


@dataclass(frozen=True, slots=True, repr=False)
class ReadFile:
    """A file read once: its bytes, what they are, and the digest its marker carries."""

    file: File
    data: bytes
    mime: str
    digest: str

    @property
    def kind(self) -> FileKind:
        return kind_of(self.mime)

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def marker(self) -> str:
        return f"[[file:{self.digest}]]"

    def __repr__(self) -> str:
        return f"ReadFile({self.file!r}, {self.mime}, {len(self.data)} bytes, digest={self.digest[:12]}…)"


def read_file(value: Any) -> ReadFile:
    """``value`` (a ``File``, path, bytes or PIL image) read and identified; ``FileInputError`` naming the file when
    it is missing, unreadable or of a kind aiforge does not send (neither a PDF nor an image)."""
    file = value if isinstance(value, File) else File(value)
    data = file.read()
    if not data:
        raise FileInputError(f"{file.name}: the file is empty.")
    mime = sniff_mime(data)
    if mime is None:
        raise FileInputError(
            f"{file.name}: not a PDF or an image (PNG, JPEG, GIF, WebP, BMP, TIFF); aiforge sends those kinds of file."
        )
    return ReadFile(file, data, mime, hashlib.sha256(data).hexdigest()[:32])


def file_name(value: Any) -> str:
    """The name a file value goes by (``receipt.png``), for a person reading a row; never reads it."""
    if isinstance(value, File):
        return value.name
    if isinstance(value, (str, os.PathLike)):
        return Path(value).name
    return "image.png" if _is_pil_image(value) else "file"


def plain_text(text: str) -> str:
    """``text`` as it may go in a prompt: ``[[file:`` broken by a zero-width space (U+200B, after ``file``), so a
    user's text that looks like a marker never names a file, and reads the same."""
    return text.replace("[[file:", "[[file\u200b:")


def is_file_value(value: Any) -> bool:
    """Whether a cell holds a file by its type (``File``, ``Path``, bytes, a PIL image); a str is text."""
    return isinstance(value, (File, os.PathLike, bytes, bytearray, memoryview)) or _is_pil_image(value)


def refuse_files(values: Any, operation: str, column: Any) -> None:
    """A one-line ``UsageError`` when one of ``values`` (a column) is a file: ``operation`` (agg, topk, join, embed,
    dedup, cluster) reads text, and a file's ``str`` is only its path; the error names what reads files instead."""
    if str(getattr(values, "dtype", "object")) != "object":  # a string or numeric column holds no file
        return
    found = next((value for value in values if is_file_value(value)), None)
    if found is None:
        return
    field = column if isinstance(column, str) else "value"
    shown = found.name if isinstance(found, File) else type(found).__name__
    raise UsageError(
        f"{operation}: the column {field!r} holds files ({shown}), and {operation} reads text, not files; read each "
        f"file with map or extract first (df['summary'] = df.aiforge.map('Summarise {{{field}}}')['response']) and "
        f"{operation} that column, or cut the documents into text with df.aiforge.split({field!r}) and {operation} "
        "its 'text' column."
    )


def _is_pil_image(value: Any) -> bool:
    return any(cls.__module__.startswith("PIL.") and cls.__name__ == "Image" for cls in type(value).__mro__)


def _pil_png(image: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
