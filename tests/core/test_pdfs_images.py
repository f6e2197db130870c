"""PDFs and images read with pypdf and Pillow (core.pdfs, core.images): real files made by tests/support/documents.py,
damaged ones refused with a one-line FileInputError, resizing that never grows a file."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from aiforge.core.errors import FileInputError
from aiforge.core.images import fitted_size, image_size, resized_image
from aiforge.core.pdfs import pdf_page_sizes, pdf_page_texts, pdf_pages, pdf_subset
from tests.support.documents import (
    encrypted_pdf,
    image_as,
    invoice_pdf,
    jpeg,
    mixed_pdf,
    png,
    receipt_png,
    scanned_pdf,
    text_pdf,
    truncated,
)

A4 = (595.28, 841.89)


# ---------------------------------------------------------------------------
# PDFs
# ---------------------------------------------------------------------------


def test_a_text_pdf_gives_its_pages_and_each_page_text() -> None:
    data = text_pdf(None, ["First page: the terms.", "Second page: the price is 40 EUR."])
    assert pdf_pages(data, "terms.pdf") == 2
    assert pdf_page_texts(data, "terms.pdf") == ["First page: the terms.", "Second page: the price is 40 EUR."]


def test_a_scanned_page_has_no_text_layer_and_gives_an_empty_text() -> None:
    data = mixed_pdf(None, ["Page one", "Page three"], scanned_at=1)
    assert pdf_page_texts(data, "mixed.pdf") == ["Page one", "", "Page three"]
    assert pdf_page_texts(scanned_pdf(None), "scan.pdf") == [""]


def test_page_sizes_are_in_points_and_turned_by_the_page_rotation() -> None:
    from pypdf import PdfReader, PdfWriter

    data = text_pdf(None, ["upright", "turned"])
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.pages[1].rotate(90)
    out = io.BytesIO()
    writer.write(out)
    sizes = pdf_page_sizes(out.getvalue(), "turned.pdf")
    assert sizes[0] == pytest.approx(A4)
    assert sizes[1] == pytest.approx(A4[::-1])


def test_a_subset_is_a_pdf_of_the_pages_asked_for() -> None:
    data = text_pdf(None, [f"Page {n}" for n in range(1, 6)])
    part = pdf_subset(data, "five.pdf", 1, 4)
    assert pdf_page_texts(part, "part.pdf") == ["Page 2", "Page 3", "Page 4"]
    with pytest.raises(FileInputError, match=r"five\.pdf: pages \[3, 9\) are not within its 5 pages"):
        pdf_subset(data, "five.pdf", 3, 9)


def test_a_pdf_with_an_empty_user_password_opens_and_is_read() -> None:
    data = encrypted_pdf(None, ["Only printing is restricted"], user_password="")
    assert pdf_page_texts(data, "restricted.pdf") == ["Only printing is restricted"]
    assert pdf_page_texts(pdf_subset(data, "restricted.pdf", 0, 1), "copy.pdf") == ["Only printing is restricted"]


def test_a_password_protected_pdf_is_a_one_line_error_naming_the_file_and_the_fix() -> None:
    with pytest.raises(FileInputError) as caught:
        pdf_pages(encrypted_pdf(None, ["Secret"], user_password="secret"), "contract.pdf")
    message = str(caught.value)
    assert message.startswith("contract.pdf: the PDF is encrypted with a password")
    assert "unprotected copy" in message and "\n" not in message


@pytest.mark.parametrize("keep", [0.2, 0.5, 0.9, 0.99])
def test_a_truncated_pdf_is_a_file_input_error(keep: float) -> None:
    data = truncated(text_pdf(None, ["One page", "Two pages"]), keep)
    with pytest.raises(FileInputError, match=r"^cut\.pdf: not a readable PDF, damaged or truncated \(.+\)\.$"):
        pdf_page_texts(data, "cut.pdf")


def test_a_file_that_only_starts_like_a_pdf_is_a_file_input_error() -> None:
    with pytest.raises(FileInputError, match=r"^fake\.pdf: not a readable PDF"):
        pdf_pages(b"%PDF-1.7\nthis is not a PDF at all\n", "fake.pdf")


def test_a_pdf_with_no_pages_is_a_file_input_error() -> None:
    from pypdf import PdfWriter

    out = io.BytesIO()
    PdfWriter().write(out)
    with pytest.raises(FileInputError, match=r"^empty\.pdf: the PDF has no pages\.$"):
        pdf_pages(out.getvalue(), "empty.pdf")


def test_an_invoice_reads_back_its_fields() -> None:
    data = invoice_pdf("INV-0042", "Acme Tools GmbH", 123.5, "2026-03-04", [("Hammer", 2, 10.0), ("Saw", 1, 103.5)])
    (text,) = pdf_page_texts(data, "inv.pdf")
    for field in ("Acme Tools GmbH", "INV-0042", "2026-03-04", "Hammer", "103.50", "Total due (EUR) 123.50"):
        assert field in text


# ---------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (png(640, 480), (640, 480)),
        (jpeg(333, 1000), (333, 1000)),
        (image_as(png(50, 40), "GIF"), (50, 40)),
        (image_as(png(50, 40), "WEBP"), (50, 40)),
        (image_as(png(50, 40), "BMP"), (50, 40)),
        (image_as(png(50, 40), "TIFF"), (50, 40)),
    ],
)
def test_image_size_reads_every_kind_sent(data: bytes, size: tuple[int, int]) -> None:
    assert image_size(data, "picture") == size


def test_image_size_is_as_shown_after_the_exif_orientation() -> None:
    from PIL import Image

    image = Image.open(io.BytesIO(jpeg(400, 300)))
    exif = image.getexif()
    exif[0x0112] = 6  # a phone photo taken upright: stored 400x300, shown 300x400
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif)
    assert image_size(out.getvalue(), "phone.jpg") == (300, 400)
    resized, _ = resized_image(out.getvalue(), "image/jpeg", "phone.jpg", max_side=200)
    assert image_size(resized, "sent.jpg") == (150, 200)


@pytest.mark.parametrize("make", [lambda: truncated(jpeg(800, 600)), lambda: truncated(png(800, 600), 0.95)])
def test_a_truncated_image_is_a_file_input_error(make: object) -> None:
    data = make()  # type: ignore[operator]
    with pytest.raises(FileInputError, match=r"^photo: not a readable image, corrupt or truncated \(.+\)\.$"):
        image_size(data, "photo")
    with pytest.raises(FileInputError, match=r"^photo: not a readable image"):
        resized_image(data, "image/jpeg", "photo", max_side=100)


def test_bytes_that_only_start_like_a_png_are_a_file_input_error() -> None:
    with pytest.raises(FileInputError, match=r"^x\.png: .*Pillow does not recognise its data"):
        image_size(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "x.png")


def test_fitted_size_scales_down_never_up_and_keeps_the_shape() -> None:
    assert fitted_size(4000, 3000, max_side=2000) == (2000, 1500)
    assert fitted_size(300, 200, max_side=2000) == (300, 200)
    assert fitted_size(2000, 2000, max_side=None, max_pixels=1_000_000) == (1000, 1000)
    assert fitted_size(1024, 2048, max_side=2048, short_side=768) == (768, 1536)


@pytest.mark.parametrize("kind", ["PNG", "JPEG", "GIF", "WEBP"])
def test_an_image_that_fits_is_sent_as_its_original_bytes(kind: str) -> None:
    data = image_as(png(300, 200), kind)
    mime = "image/" + kind.lower()
    sent, sent_mime = resized_image(data, mime, "small", max_side=1568, max_pixels=1_200_000)
    assert sent is data and sent_mime == mime


@pytest.mark.parametrize("kind", ["BMP", "TIFF"])
def test_bmp_and_tiff_are_sent_as_png_of_the_same_size(kind: str) -> None:
    data = image_as(png(300, 200), kind)
    sent, mime = resized_image(data, "image/" + kind.lower(), "scan", max_side=1568)
    assert mime == "image/png" and sent.startswith(b"\x89PNG")
    assert image_size(sent, "sent") == (300, 200)


@pytest.mark.parametrize(
    ("data", "mime"), [(jpeg(4000, 3000), "image/jpeg"), (png(3000, 4000), "image/png")], ids=["photo", "scan"]
)
def test_a_resized_image_fits_keeps_its_kind_and_is_smaller_than_the_original(data: bytes, mime: str) -> None:
    sent, sent_mime = resized_image(data, mime, "big", max_side=1568, max_pixels=1_200_000)
    width, height = image_size(sent, "sent")
    assert sent_mime == mime
    assert max(width, height) <= 1568 and width * height <= 1_200_000
    assert abs(width / height - image_size(data, "big")[0] / image_size(data, "big")[1]) < 0.01
    assert len(sent) < len(data)


def test_a_receipt_is_a_readable_png() -> None:
    data = receipt_png("Corner Shop", "2026-03-04", [("Milk", 1.2), ("Bread", 2.5)], 3.7)
    assert data.startswith(b"\x89PNG")
    width, height = image_size(data, "receipt.png")
    assert width == 600 and height > 300


# ---------------------------------------------------------------------------
# The documents extra is imported on use only
# ---------------------------------------------------------------------------


def test_import_aiforge_loads_neither_pypdf_nor_pillow() -> None:
    probe = (
        "import sys, aiforge, aiforge.core.pdfs, aiforge.core.images; "
        "print('pypdf' in sys.modules, 'PIL' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("blocked", "call"),
    [
        ("pypdf", "from aiforge.core.pdfs import pdf_pages; pdf_pages(b'%PDF-1.4', 'a.pdf')"),
        ("PIL", "from aiforge.core.images import image_size; image_size(b'GIF89a', 'a.gif')"),
    ],
)
def test_a_missing_documents_extra_is_a_config_error_naming_it(blocked: str, call: str) -> None:
    probe = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from aiforge.core.errors import ConfigError\n"
        f"try:\n    {call}\nexcept ConfigError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert 'install the documents extra (pip install -e ".[documents]")' in out
