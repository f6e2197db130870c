"""Real documents and images made on the spot, for the tests, the benchmark and the tutorial: text PDFs (fpdf2),
a scanned-like page (an image, no text layer), encrypted and truncated PDFs (pypdf), PNG and JPEG files of any size,
invoices and receipts a model can read. Nothing is copied from elsewhere; every function returns the file's bytes
and writes them to ``path`` when one is given.
"""

from __future__ import annotations

import io
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

InvoiceLine = tuple[str, int, float]
"""(description, quantity, unit price)."""


def _written(data: bytes, path: str | Path | None) -> bytes:
    if path is not None:
        Path(path).write_bytes(data)
    return data


def text_pdf(path: str | Path | None, pages: Sequence[str]) -> bytes:
    """A PDF with one page per text (Helvetica, A4, wrapped lines), each with a real text layer."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=False)
    for text in pages:
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 5, text)
    return _written(bytes(pdf.output()), path)


def scanned_pdf(path: str | Path | None, lines: Sequence[str] = ("A scanned page", "with no text layer")) -> bytes:
    """A one-page PDF whose page is only a picture of text (as a scanner makes): pypdf finds no text on it."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.image(io.BytesIO(text_image(lines, 1240, 1754)), x=0, y=0, w=210, h=297)
    return _written(bytes(pdf.output()), path)


def mixed_pdf(path: str | Path | None, pages: Sequence[str], scanned_at: int) -> bytes:
    """``pages`` as text pages with a scanned-like page (no text layer) inserted at index ``scanned_at``."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    text = PdfReader(io.BytesIO(text_pdf(None, pages)))
    scan = PdfReader(io.BytesIO(scanned_pdf(None)))
    for index, page in enumerate(text.pages):
        if index == scanned_at:
            writer.add_page(scan.pages[0])
        writer.add_page(page)
    if scanned_at >= len(pages):
        writer.add_page(scan.pages[0])
    out = io.BytesIO()
    writer.write(out)
    return _written(out.getvalue(), path)


def encrypted_pdf(path: str | Path | None, pages: Sequence[str] = ("Secret",), user_password: str = "secret") -> bytes:
    """A PDF encrypted with ``user_password`` (RC4-128, no extra package needed); ``""`` makes one that opens
    without a password (only its permissions are restricted)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf(None, pages))))
    writer.encrypt(user_password=user_password, owner_password="owner-" + user_password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return _written(out.getvalue(), path)


def truncated(data: bytes, keep: float = 0.5, path: str | Path | None = None) -> bytes:
    """The first ``keep`` share of ``data``: a file cut short, as by a failed download."""
    return _written(data[: max(1, int(len(data) * keep))], path)


def _noise_image(width: int, height: int, seed: int) -> Any:
    """An RGB image with smooth gradients and some noise: it compresses like a photo, not like a flat colour."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    small = Image.new("RGB", (max(1, width // 16), max(1, height // 16)))
    small.putdata(
        [
            (rng.randrange(256), (x * 7 + y * 3) % 256, (x * y) % 256)
            for y in range(small.height)
            for x in range(small.width)
        ]
    )
    image = small.resize((width, height), Image.Resampling.BILINEAR)
    draw = ImageDraw.Draw(image)
    for _ in range(20):
        x, y = rng.randrange(width), rng.randrange(height)
        draw.ellipse((x, y, x + width // 10 + 1, y + height // 10 + 1), outline=(255, 255, 255), width=3)
    return image


def png(width: int, height: int, path: str | Path | None = None, seed: int = 0) -> bytes:
    """A PNG of ``width`` x ``height`` pixels (a photo-like picture)."""
    buffer = io.BytesIO()
    _noise_image(width, height, seed).save(buffer, format="PNG")
    return _written(buffer.getvalue(), path)


def jpeg(width: int, height: int, path: str | Path | None = None, seed: int = 0, quality: int = 90) -> bytes:
    """A JPEG of ``width`` x ``height`` pixels (a photo-like picture)."""
    buffer = io.BytesIO()
    _noise_image(width, height, seed).save(buffer, format="JPEG", quality=quality)
    return _written(buffer.getvalue(), path)


def image_as(data: bytes, fmt: str) -> bytes:
    """``data`` (any image) saved again as ``fmt`` ("BMP", "TIFF", "GIF", "WEBP" ...)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.open(io.BytesIO(data)).convert("RGB").save(buffer, format=fmt)
    return buffer.getvalue()


def text_image(lines: Sequence[str], width: int, height: int, size: int = 40) -> bytes:
    """A PNG of black text on white, like a scanned page (Pillow's default font at ``size`` px)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=size)
    for number, line in enumerate(lines):
        draw.text((size * 2, size * 2 + number * size * 3 // 2), line, fill=0, font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def invoice_pdf(
    number: str,
    vendor: str,
    total: float,
    date: str,
    lines: Sequence[InvoiceLine],
    path: str | Path | None = None,
) -> bytes:
    """A one-page invoice with a text layer: vendor, number, date, a table of lines and the total."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.cell(0, 10, vendor, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.cell(0, 7, f"Invoice number: {number}", new_x="LMARGIN", new_y="NEXT")
    pdf.cell(0, 7, f"Invoice date: {date}", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(5)
    pdf.set_font("Helvetica", "B", 11)
    for text, width in (("Description", 100), ("Qty", 20), ("Unit price", 35), ("Amount", 35)):
        pdf.cell(width, 7, text, border=1)
    pdf.ln()
    pdf.set_font("Helvetica", size=11)
    for description, quantity, price in lines:
        pdf.cell(100, 7, description, border=1)
        pdf.cell(20, 7, str(quantity), border=1, align="R")
        pdf.cell(35, 7, f"{price:.2f}", border=1, align="R")
        pdf.cell(35, 7, f"{quantity * price:.2f}", border=1, align="R")
        pdf.ln()
    pdf.ln(3)
    pdf.set_font("Helvetica", "B", 12)
    pdf.cell(155, 8, "Total due (EUR)", align="R")
    pdf.cell(35, 8, f"{total:.2f}", align="R")
    return _written(bytes(pdf.output()), path)


def receipt_png(
    shop: str,
    date: str,
    items: Sequence[tuple[str, float]],
    total: float,
    path: str | Path | None = None,
    width: int = 600,
) -> bytes:
    """A till receipt as a PNG (a photo of it, in effect): shop, date, one line an item, the total, all readable."""
    lines = [shop.upper(), date, ""]
    lines += [f"{name[:22]:<22} {price:>8.2f}" for name, price in items]
    lines += ["", f"{'TOTAL':<22} {total:>8.2f}", "", "Thank you!"]
    return _written(text_image(lines, width, 80 + 42 * len(lines), size=28), path)
