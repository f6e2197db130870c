"""PDF facts a batch needs, read with pypdf (the ``documents`` extra): pages, their text, their size, a part of them.

pypdf is imported on first use, never by ``import aiforge``. Every function takes the file's bytes and the name to
show in an error: an encrypted PDF that the empty password does not open, a broken or truncated one, or one with no
pages is a ``FileInputError`` naming the file and why, one line. A PDF encrypted with an empty user password (common
for "protected" PDFs that only restrict printing) opens and is read like any other.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from aiforge.core.errors import ConfigError, FileInputError

if TYPE_CHECKING:
    from pypdf import PdfReader

DOCUMENTS_EXTRA = 'pip install -e ".[documents]"'
"""How to install pypdf and Pillow, named in the error a missing one raises."""


def pdf_pages(data: bytes, name: str) -> int:
    """How many pages the PDF ``data`` has; ``FileInputError`` naming ``name`` when it cannot be read."""
    return len(_reader(data, name).pages)


def pdf_page_texts(data: bytes, name: str) -> list[str]:
    """Each page's text layer, page by page (pypdf's extraction); a page with no text layer (a scan) gives ``""``."""
    return _texts(_reader(data, name), name)


def pdf_page_sizes(data: bytes, name: str) -> list[tuple[float, float]]:
    """Each page's (width, height) in points (1/72 inch) as shown: its crop box, turned by its rotation."""
    return _sizes(_reader(data, name), name)


def pdf_page_facts(data: bytes, name: str) -> list[tuple[str, float, float]]:
    """Each page's ``(text, width, height)``: ``pdf_page_texts`` and ``pdf_page_sizes`` from one parse."""
    reader = _reader(data, name)
    sizes = _sizes(reader, name)
    return [(text, width, height) for text, (width, height) in zip(_texts(reader, name), sizes, strict=True)]


def pdf_subset(data: bytes, name: str, start: int, stop: int) -> bytes:
    """A new PDF of pages ``[start, stop)`` (0-based, as in a slice) of ``data``, unencrypted."""
    from pypdf import PdfWriter

    reader = _reader(data, name)
    count = len(reader.pages)
    if not 0 <= start < stop <= count:
        raise FileInputError(f"{name}: pages [{start}, {stop}) are not within its {count} pages.")
    writer = PdfWriter()
    try:
        for index in range(start, stop):
            writer.add_page(reader.pages[index])
        out = io.BytesIO()
        writer.write(out)
    except Exception as exc:  # a damaged page object
        raise FileInputError(f"{name}: pages [{start}, {stop}) cannot be copied ({reason(exc)}).") from exc
    return out.getvalue()


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf's warnings ("EOF marker not found", "Ignoring wrong pointing object") held back while aiforge reads: a
    file it cannot read becomes its row's ``FileInputError``, and one it can read needs no word under a cell."""
    global _quiet_readers, _quiet_saved
    logger = logging.getLogger("pypdf")
    # Threads read PDFs at once: the first reader in saves the user's level, the last one out restores it.
    with _quiet_lock:
        if _quiet_readers == 0:
            _quiet_saved = logger.level
            logger.setLevel(logging.ERROR)
        _quiet_readers += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_readers -= 1
            if _quiet_readers == 0:
                logger.setLevel(_quiet_saved)


_quiet_lock = threading.Lock()
_quiet_readers = 0
_quiet_saved = logging.NOTSET


def _texts(reader: PdfReader, name: str) -> list[str]:
    texts = []
    for number, page in enumerate(reader.pages, 1):
        try:
            with _quiet_pypdf():
                texts.append(page.extract_text() or "")
        except Exception as exc:  # pypdf raises many kinds (KeyError, ValueError ...) on a damaged content stream
            raise FileInputError(f"{name}: page {number}'s text cannot be read ({reason(exc)}).") from exc
    return texts


def _sizes(reader: PdfReader, name: str) -> list[tuple[float, float]]:
    sizes = []
    for number, page in enumerate(reader.pages, 1):
        try:
            box = page.cropbox
            width, height = abs(float(box.width)), abs(float(box.height))
            rotated = page.rotation % 180 == 90
        except Exception as exc:  # a page with no usable box
            raise FileInputError(f"{name}: page {number} has no page size ({reason(exc)}).") from exc
        sizes.append((height, width) if rotated else (width, height))
    return sizes


def _reader(data: bytes, name: str) -> PdfReader:
    """An open reader of ``data``, decrypted with the empty password when encrypted, with at least one page."""
    pypdf = _pypdf()
    try:
        with _quiet_pypdf():
            reader: PdfReader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileInputError(
                f"{name}: the PDF is encrypted with a password; save an unprotected copy (print to PDF) and use that."
            )
        with _quiet_pypdf():
            count = len(reader.pages)
    except FileInputError:
        raise
    except pypdf.errors.DependencyError as exc:
        raise FileInputError(
            f"{name}: the PDF is AES-encrypted; reading it needs the cryptography package (pip install cryptography)."
        ) from exc
    except Exception as exc:  # pypdf's errors and the KeyError, ValueError ... a damaged file can raise
        raise FileInputError(f"{name}: not a readable PDF, damaged or truncated ({reason(exc)}).") from exc
    if count == 0:
        raise FileInputError(f"{name}: the PDF has no pages.")
    return reader


def _pypdf() -> Any:
    try:
        import pypdf
        import pypdf.errors
    except ImportError:
        raise ConfigError(f"Reading PDFs needs pypdf: install the documents extra ({DOCUMENTS_EXTRA}).") from None
    return pypdf


def reason(exc: BaseException) -> str:
    """The first line of ``exc``'s message, or its type when it has none (kept short for a one-line error): why a
    PDF or an image could not be read, as its ``FileInputError`` says it."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."
