"""PDFs and images read with pypdf and Pillow (core.pdfs, core.images) and the vendors' rules for them
(core.file_rules): real files made by tests/support/documents.py, damaged ones refused with a one-line
FileInputError, resizing that never grows a file, token counts checked against the vendors' worked examples."""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiforge.core.errors import FileInputError
from aiforge.core.file_rules import (
    LIMITS,
    file_tokens,
    image_tokens,
    pdf_page_tokens,
    sent_image_size,
    wire_file,
)
from aiforge.core.files import File, read_file
from aiforge.core.images import fitted_size, image_size, resized_image
from aiforge.core.pdfs import pdf_page_sizes, pdf_page_texts, pdf_pages, pdf_subset
from aiforge.core.tokens import estimate_tokens
from tests.support.documents import (
    encrypted_pdf,
    image_as,
    invoice_pdf,
    jpeg,
    mixed_pdf,
    png,
    receipt_png,
    scanned_pdf,
    text_image,
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


def test_readers_in_threads_leave_the_users_pypdf_log_level_as_it_was() -> None:
    import logging
    import threading

    from aiforge.core.pdfs import _quiet_pypdf

    logger = logging.getLogger("pypdf")
    before = logger.level
    logger.setLevel(logging.WARNING)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with _quiet_pypdf():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with _quiet_pypdf():
            second_in.set()
            first_out.wait(5)  # the first reader leaves while this one still reads

    try:
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert logger.level == logging.WARNING
    finally:
        logger.setLevel(before)


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
        "import sys, aiforge, aiforge.core.pdfs, aiforge.core.images, aiforge.core.file_rules; "
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


# ---------------------------------------------------------------------------
# The vendors' rules (core.file_rules), against the worked examples of their docs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "detail", "tokens"),
    [
        ((1024, 1024), "high", 765),  # no first resize; 768 x 768: 4 tiles
        ((2048, 4096), "high", 1105),  # 1024 x 2048, then 768 x 1536: 6 tiles
        ((2048, 4096), "low", 85),
        ((2048, 4096), "auto", 1105),  # auto is counted as high: the most it may cost
        ((512, 512), "high", 255),  # one tile, never scaled up
    ],
)
def test_openai_tile_models_count_85_plus_170_a_tile(size: tuple[int, int], detail: str, tokens: int) -> None:
    assert image_tokens(*size, "openai", "gpt-4o", detail) == tokens  # type: ignore[arg-type]
    assert image_tokens(*size, "openai", "gpt-4.1-2025-04-14", detail) == tokens  # type: ignore[arg-type]


def test_gpt_4o_mini_counts_the_same_tiles_at_its_own_rate() -> None:
    assert image_tokens(1024, 1024, "openai", "gpt-4o-mini", "high") == 2833 + 5667 * 4
    assert image_tokens(1024, 1024, "openai", "openai/gpt-4o-mini-2024-07-18", "low") == 2833


@pytest.mark.parametrize(
    ("size", "patches"),
    [((1024, 1024), 1024), ((1800, 2400), 1452), ((100, 100), 16)],  # the docs' two examples, and a small one
)
def test_openai_patch_models_count_32_px_patches_times_their_multiplier(size: tuple[int, int], patches: int) -> None:
    assert image_tokens(*size, "openai", "gpt-4.1-mini", "high") == math.ceil(patches * 1.62)
    assert image_tokens(*size, "openai", "gpt-4.1-nano", "high") == math.ceil(patches * 2.46)
    assert image_tokens(*size, "openai", "o4-mini", "high") == math.ceil(patches * 1.72)


def test_a_model_the_table_does_not_name_is_counted_as_gpt_4o() -> None:
    assert image_tokens(1024, 1024, "openai", None) == image_tokens(1024, 1024, "openai", "some-vision-model") == 765


@pytest.mark.parametrize(
    ("size", "tokens"),
    [
        ((1092, 1092), 1590),  # the docs' table: the largest 1:1 image sent as is, about 1,590 tokens
        ((1000, 1000), 1334),
        ((200, 200), 54),
        ((4000, 3000), 1598),  # scaled to 1264 x 948: under about 1,600 tokens
        ((8000, 100), 40),  # scaled to 1568 x 19: the long edge limit
    ],
)
def test_anthropic_counts_pixels_over_750_after_its_resize(size: tuple[int, int], tokens: int) -> None:
    assert image_tokens(*size, "anthropic", "claude-sonnet-4-5") == pytest.approx(tokens, abs=1)


@pytest.mark.parametrize(
    ("rules", "detail", "sent"),
    [
        ("openai", "high", (1408, 1056)),  # the patch models' 44 x 33 patches; the tile models read 1024 x 768 of it
        ("openai", "low", (512, 384)),
        ("anthropic", "auto", (1264, 948)),
    ],
)
def test_the_size_sent_is_what_the_vendor_reads(rules: str, detail: str, sent: tuple[int, int]) -> None:
    assert sent_image_size(4000, 3000, rules, detail) == sent  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 12000), st.integers(1, 12000), st.sampled_from(["high", "low"]))
def test_an_image_is_never_sent_larger_and_costs_what_the_original_would(width: int, height: int, detail: str) -> None:
    for rules, model in (
        ("openai", "gpt-4o"),
        ("openai", "gpt-4o-mini"),
        ("openai", "gpt-4.1-mini"),
        ("anthropic", None),
    ):
        sent_w, sent_h = sent_image_size(width, height, rules, detail, model)  # type: ignore[arg-type]
        assert sent_w <= width and sent_h <= height
        # The vendor does the same resize on the original: the smaller image sent costs what the original would
        # (at low detail a patch model, which has no low detail, reads the 512-px image sent: fewer tokens).
        original = image_tokens(width, height, rules, model, detail)  # type: ignore[arg-type]
        sent = image_tokens(sent_w, sent_h, rules, model, detail)  # type: ignore[arg-type]
        if detail == "low" and model == "gpt-4.1-mini":
            assert sent <= original
        else:
            assert sent == original


def test_a_pdf_page_costs_its_text_and_the_page_as_an_image() -> None:
    # Anthropic: 1,500 to 3,000 tokens a page of text, in its docs' estimate; an A4 page as an image is about 1,600.
    assert 1590 <= pdf_page_tokens(0, *A4, "anthropic", None) <= 1600
    assert 1500 <= pdf_page_tokens(600, *A4, "anthropic", None) <= 3000
    # OpenAI: an A4 page at 150 dpi is 1240 x 1754, read at 768 x 1086: 6 tiles.
    assert pdf_page_tokens(600, *A4, "openai", "gpt-4o") == 600 + 85 + 170 * 6


def test_file_tokens_of_a_pdf_add_up_its_pages_and_of_an_image_its_sent_size() -> None:
    pages = ["a" * 400, "b" * 4000]
    pdf = read_file(File(text_pdf(None, pages), name="two.pdf"))
    texts = pdf_page_texts(pdf.data, "two.pdf")
    expected = sum(pdf_page_tokens(estimate_tokens(text), *A4, "anthropic", None) for text in texts)
    assert file_tokens(pdf, "anthropic", None) == expected
    photo = read_file(File(jpeg(4000, 3000), name="photo.jpg"))
    assert file_tokens(photo, "openai", "gpt-4o", "high") == 85 + 170 * 4
    assert file_tokens(photo, "openai", "gpt-4o", "low") == 85
    assert file_tokens(photo, "anthropic", None) == math.ceil(1264 * 948 / 750)


def test_limits_are_the_published_ones() -> None:
    assert LIMITS["openai"].pdf_pages == LIMITS["anthropic"].pdf_pages == 100
    assert LIMITS["openai"].pdf_bytes == LIMITS["anthropic"].pdf_bytes == 32 * 1024 * 1024
    assert LIMITS["anthropic"].image_side == 8000
    assert LIMITS["anthropic"].images_per_request == 100 and LIMITS["openai"].images_per_request == 500


# ---------------------------------------------------------------------------
# wire_file: what is actually sent
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("rules", "detail"), [("openai", "high"), ("openai", "low"), ("anthropic", "auto")])
def test_a_photo_is_sent_at_the_size_the_vendor_reads_in_fewer_bytes(rules: str, detail: str) -> None:
    original = jpeg(4000, 3000)
    wire = wire_file(read_file(File(original, name="photo.jpg")), rules, detail)  # type: ignore[arg-type]
    assert (wire.kind, wire.mime, wire.name) == ("image", "image/jpeg", "photo.jpg")
    assert image_size(wire.data, "sent") == sent_image_size(4000, 3000, rules, detail)  # type: ignore[arg-type]
    assert len(wire.data) < len(original)


def test_an_image_that_fits_is_sent_as_is_and_a_bmp_as_png() -> None:
    small = png(400, 300)
    assert wire_file(read_file(File(small, name="small.png")), "anthropic").data is small
    bmp = wire_file(read_file(File(image_as(small, "BMP"), name="scan.bmp")), "openai")
    assert bmp.mime == "image/png" and image_size(bmp.data, "sent") == (400, 300)


def test_an_image_over_anthropics_bytes_as_png_is_sent_as_jpeg() -> None:
    from PIL import Image

    noise = Image.frombytes("RGBA", (1000, 1000), os.urandom(4_000_000))  # incompressible: 4 MB as PNG
    buffer = io.BytesIO()
    noise.save(buffer, format="PNG")
    assert len(buffer.getvalue()) > LIMITS["anthropic"].image_bytes
    wire = wire_file(read_file(File(buffer.getvalue(), name="noise.png")), "anthropic")
    assert wire.mime == "image/jpeg" and len(wire.data) <= LIMITS["anthropic"].image_bytes
    assert image_size(wire.data, "sent") == (1000, 1000)


def test_a_pdf_is_sent_as_is() -> None:
    data = text_pdf(None, ["One", "Two"])
    wire = wire_file(read_file(File(data, name="doc.pdf")), "openai")
    assert (wire.kind, wire.mime, wire.data, wire.name) == ("pdf", "application/pdf", data, "doc.pdf")


def test_a_pdf_over_the_page_limit_names_the_limit_and_the_fix() -> None:
    data = text_pdf(None, [f"Page {n}" for n in range(101)])
    with pytest.raises(FileInputError) as caught:
        wire_file(read_file(File(data, name="long.pdf")), "anthropic")
    assert str(caught.value) == (
        "long.pdf: 101 pages, over Anthropic's 100 pages a request; split it into parts of at most 100 pages "
        "or send its text (FILE_INPUT='text')."
    )


def test_a_pdf_over_the_bytes_limit_is_refused_before_it_is_parsed() -> None:
    data = text_pdf(None, ["x"]) + b"\n" * (32 * 1024 * 1024)
    with pytest.raises(FileInputError, match=r"^big\.pdf: 32\.0 MB, over OpenAI's 32\.0 MB of PDF a request; split"):
        wire_file(read_file(File(data, name="big.pdf")), "openai")


def test_an_encrypted_pdf_fails_on_the_wire_too() -> None:
    with pytest.raises(FileInputError, match=r"^locked\.pdf: the PDF is encrypted"):
        wire_file(read_file(File(encrypted_pdf(None), name="locked.pdf")), "openai")


def test_an_animated_gif_is_sent_as_a_png_of_its_first_frame() -> None:
    from PIL import Image

    frames = [Image.new("RGB", (60, 40), colour) for colour in ("red", "blue", "green")]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    wire = wire_file(read_file(File(buffer.getvalue(), name="spinner.gif")), "openai")
    assert wire.mime == "image/png"
    first = Image.open(io.BytesIO(wire.data)).convert("RGB")
    assert first.size == (60, 40) and first.getpixel((0, 0)) == (255, 0, 0)


def _gradient(mode: str, width: int, height: int) -> bytes:
    """A left-to-right gradient over the whole range of ``mode`` (16-bit, 32-bit integer or float), as PNG or TIFF."""
    from PIL import Image

    top = {"I;16": 65535, "I": 1_000_000, "F": 1.0}[mode]
    row = [top * x / (width - 1) for x in range(width)]
    image = Image.new(mode, (width, height))
    image.putdata([int(v) if mode != "F" else v for v in row] * height)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG" if mode == "I;16" else "TIFF")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("mode", "size"), [("I;16", (3000, 200)), ("I", (3000, 200)), ("F", (3000, 200)), ("F", (300, 20))]
)
def test_a_16_bit_or_float_image_is_sent_with_its_shades_not_washed_out(mode: str, size: tuple[int, int]) -> None:
    from PIL import Image

    name = "depth.png" if mode == "I;16" else "depth.tif"
    wire = wire_file(read_file(File(_gradient(mode, *size), name=name)), "openai", "auto", "gpt-4o")
    sent = Image.open(io.BytesIO(wire.data)).convert("L")
    width = sent.width
    left, middle, right = (sent.getpixel((x, sent.height // 2)) for x in (0, width // 2, width - 1))
    assert left <= 5 and 110 <= middle <= 145 and right >= 250  # black to white through grey, as the original


def test_a_scan_in_black_and_white_is_never_sent_in_more_bytes_than_the_original() -> None:
    from PIL import Image

    grey = text_image([f"Line {n}: invoice total 12.50" for n in range(60)], 2480, 3508)  # A4 at 300 dpi
    page = Image.open(io.BytesIO(grey))
    for fmt, options in (("PNG", {}), ("TIFF", {"compression": "group4"})):
        buffer = io.BytesIO()
        page.convert("1").save(buffer, format=fmt, **options)
        read = read_file(File(buffer.getvalue(), name=f"scan.{fmt.lower()}"))
        for rules in ("openai", "anthropic"):
            wire = wire_file(read, rules)  # type: ignore[arg-type]
            assert len(wire.data) <= len(read.data), (fmt, rules)
            assert wire.mime in ("image/png", read.mime)
    resized = wire_file(read_file(File(grey, name="grey.png")), "openai")
    assert len(resized.data) < len(grey) and Image.open(io.BytesIO(resized.data)).mode == "L"  # one channel, not RGB


def test_a_low_quality_jpeg_that_would_grow_is_sent_as_is_and_counted_the_same() -> None:
    original = jpeg(2400, 1800, quality=30)
    read = read_file(File(original, name="photo.jpg"))
    for rules, model in (("openai", "gpt-4o"), ("openai", "gpt-4.1-mini"), ("anthropic", None)):
        wire = wire_file(read, rules, "auto", model)  # type: ignore[arg-type]
        assert len(wire.data) <= len(original)
        # Tokens are counted from the size the vendor reads: the same whether it or aiforge scales the image down.
        sent = sent_image_size(*image_size(wire.data, "sent"), rules, "auto", model)  # type: ignore[arg-type]
        counted = image_tokens(*sent, rules, model, "auto")  # type: ignore[arg-type]
        assert counted == file_tokens(read, rules, model)  # type: ignore[arg-type]


def test_a_tiff_of_several_pages_is_refused_not_sent_as_its_first_page() -> None:
    from PIL import Image

    pages = [Image.new("L", (80, 100), shade) for shade in (255, 128, 0)]
    buffer = io.BytesIO()
    pages[0].save(buffer, format="TIFF", save_all=True, append_images=pages[1:])
    read = read_file(File(buffer.getvalue(), name="fax.tif"))
    message = "fax.tif: a 3-page TIFF; convert it to PDF, or pass its pages as separate images."
    for call in (lambda: wire_file(read, "anthropic"), lambda: file_tokens(read, "openai", "gpt-4o")):
        with pytest.raises(FileInputError) as caught:
            call()
        assert str(caught.value) == message
    one = wire_file(read_file(File(image_as(png(80, 100), "TIFF"), name="one.tif")), "openai")
    assert one.mime == "image/png"  # a TIFF of one page is sent as PNG, as before


def test_an_image_over_pillows_decompression_bomb_limit_is_a_file_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # Pillow refuses over twice this: 200 x 200 stands in
    with pytest.raises(FileInputError, match=r"^huge\.png: too many pixels to read safely \(.+\); scale it down\.$"):
        image_size(png(200, 200), "huge.png")
