"""Documents and images (issue 33): local PDF text extraction, image and page tokens against the vendors' rules,
and bytes sent against the original files.

- extraction: pages a second of ``core.pdfs.pdf_page_texts`` (pypdf) over generated text PDFs (50 PDFs x 10 pages;
  a quick run 10 x 10), the text checked to come back.
- tokens: ``core.file_rules.file_tokens`` (what the batch estimate counts) on real generated PNGs of a set of sizes,
  against a transcription of each vendor's published rule written here, apart from aiforge's (floats, as the docs
  do their arithmetic): OpenAI high and low (gpt-4o), a patch model (gpt-4.1-mini), Anthropic; aiforge counts the
  image it sends (resized), the rules the original. PDF pages (an invoice, a dense page, a scan) against
  Anthropic's published range (1,500 to 3,000 tokens a page).
- bytes: ``wire_file`` on 4000 x 3000 JPEG photos, 3000 x 4000 PNG scans, 1-bit A4 scans at 300 dpi and
  quality-30 JPEG photos, per vendor: bytes sent against the originals' bytes, and the time to resize.

python -m bench.documents            # prints the table
python -m bench.run --only documents
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/documents.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Row, run_measures  # noqa: E402

GROUP = "documents"
SIZES = [(200, 200), (512, 512), (1000, 1000), (1024, 1024), (1092, 1092), (1920, 1080), (2048, 4096), (4000, 3000)]
"""Image sizes of the token table: the vendors' worked examples, a phone photo, a full-HD screenshot."""


def extraction_rows(quick: bool) -> list[Row]:
    from aiforge.core.pdfs import pdf_page_texts
    from tests.support.documents import text_pdf

    count, pages = (10, 10) if quick else (50, 10)
    paragraph = (
        "Section {n}. The supplier delivers the goods within thirty days of the order. Payment is due within "
        "forty-five days of the invoice date; late payments bear interest at the statutory rate. "
    )
    pdfs = [text_pdf(None, [paragraph.format(n=f"{d}.{p}") * 12 for p in range(pages)]) for d in range(count)]
    started = time.perf_counter()
    texts = [pdf_page_texts(data, f"doc{d}.pdf") for d, data in enumerate(pdfs)]
    elapsed = time.perf_counter() - started
    total = count * pages
    ok = all(len(doc) == pages and all("Section" in page for page in doc) for doc in texts)
    chars = sum(len(page) for doc in texts for page in doc) / total
    return [
        Row(
            GROUP,
            f"local PDF text extraction, {count} PDFs x {pages} pages (pypdf)",
            f"{total / elapsed:,.0f} pages/s",
            target="every page's text back",
            passed=ok,
            note=f"{elapsed:.2f} s for {total} pages, {chars:,.0f} characters a page, "
            f"{sum(map(len, pdfs)) / count / 1024:.0f} KB a PDF; one process, pages read one after another",
        )
    ]


def _openai_rule(width: float, height: float, detail: str, base: int = 85, tile: int = 170) -> int:
    """OpenAI's published steps for tile models, as the docs write them."""
    if detail == "low":
        return base
    if max(width, height) > 2048:
        width, height = width * 2048 / max(width, height), height * 2048 / max(width, height)
    if min(width, height) > 768:
        width, height = width * 768 / min(width, height), height * 768 / min(width, height)
    return base + tile * math.ceil(width / 512) * math.ceil(height / 512)


def _anthropic_rule(width: float, height: float) -> float:
    """Anthropic's: width x height / 750, after scaling to a long edge of 1568 and about 1,600 tokens."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1600 * 750 / (width * height)))
    return width * scale * height * scale / 750


def _patch_rule(width: float, height: float, multiplier: float) -> int:
    """OpenAI's patch models: 32-px patches, at most 1536 (the image scaled down to fit), times the multiplier."""
    if math.ceil(width / 32) * math.ceil(height / 32) > 1536:
        r = math.sqrt(32 * 32 * 1536 / (width * height))
        r *= min(math.floor(width * r / 32) / (width * r / 32), math.floor(height * r / 32) / (height * r / 32))
        width, height = math.floor(width * r), math.floor(height * r)  # the docs' example: 1056 x 1408, whole pixels
    return math.ceil(min(1536, math.ceil(width / 32) * math.ceil(height / 32)) * multiplier)


def token_rows(quick: bool) -> list[Row]:
    from aiforge.core.file_rules import file_tokens
    from aiforge.core.files import File, read_file
    from tests.support.documents import png

    rows = []
    for width, height in SIZES[:4] if quick else SIZES:
        read = read_file(File(png(width, height), name=f"{width}x{height}.png"))
        high = file_tokens(read, "openai", "gpt-4o", "high")
        low = file_tokens(read, "openai", "gpt-4o", "low")
        claude = file_tokens(read, "anthropic", "claude-sonnet-4-5")
        mini = file_tokens(read, "openai", "gpt-4.1-mini", "high")
        rule_high, rule_low = _openai_rule(width, height, "high"), _openai_rule(width, height, "low")
        rule_claude, rule_mini = _anthropic_rule(width, height), _patch_rule(width, height, 1.62)
        rows.append(
            Row(
                GROUP,
                f"image tokens {width} x {height}: gpt-4o high / low, gpt-4.1-mini, Anthropic",
                f"{high:,} / {low:,}, {mini:,}, {claude:,}",
                f"rule: {rule_high:,} / {rule_low:,}, {rule_mini:,}, {rule_claude:,.1f}",
                ratio=claude / rule_claude,
                target="OpenAI equal; Anthropic within 1 token or 0.25%",
                passed=(high, low, mini) == (rule_high, rule_low, rule_mini)
                and (abs(claude - rule_claude) < 1 or abs(claude / rule_claude - 1) <= 0.0025),
                note="Anthropic: the image scaled to whole pixels under the cap (rule in fractions: 1,600.0), "
                "tokens rounded up"
                if rule_claude >= 1599.5
                else "",
            )
        )
    rows += _page_rows()
    return rows


def _page_rows() -> list[Row]:
    from aiforge.core.file_rules import file_tokens
    from aiforge.core.files import File, read_file
    from tests.support.documents import invoice_pdf, scanned_pdf, text_pdf

    lines = [(f"Item {n}: consulting, {n} hours", n, 95.0) for n in range(1, 16)]
    invoice = invoice_pdf("INV-2031", "Acme Tools GmbH", sum(q * p for _, q, p in lines), "2026-03-04", lines)
    dense = text_pdf(None, [("The parties agree to the terms set out below. " * 70).strip()])
    rows = []
    for label, data in (("an invoice", invoice), ("a dense text page", dense), ("a scanned page", scanned_pdf(None))):
        read = read_file(File(data, name="page.pdf"))
        claude = file_tokens(read, "anthropic", "claude-sonnet-4-5")
        openai = file_tokens(read, "openai", "gpt-4o")
        rows.append(
            Row(
                GROUP,
                f"PDF page tokens, {label} (A4, one page)",
                f"Anthropic {claude:,}, OpenAI {openai:,}",
                "Anthropic's docs: 1,500-3,000 a page",
                target="Anthropic within its range",
                passed=1500 <= claude <= 3000,
                note="text tokens (4 characters a token) + the page as an image at 150 dpi, read as each vendor "
                "reads an image (Anthropic ~1,600, OpenAI gpt-4o high 1,105)",
            )
        )
    return rows


def bytes_rows(quick: bool) -> list[Row]:
    from aiforge.core.file_rules import wire_file
    from aiforge.core.files import File, read_file
    from tests.support.documents import jpeg, text_image

    photos = [jpeg(4000, 3000, seed=n) for n in range(2 if quick else 5)]
    scans = [
        text_image([f"Scanned page {n}", "Invoice INV-2031", "Total due 1,425.00 EUR"] * 12, 3000, 4000, size=60)
        for n in range(1 if quick else 3)
    ]
    # What re-encoding made larger before: a black-and-white scan (A4 at 300 dpi, 1 bit) and a low-quality JPEG.
    bilevel = [
        _bilevel(data)
        for data in (
            text_image([f"Fax page {n}", "Total due 1,425.00 EUR"] * 20, 2480, 3508, 36)
            for n in range(1 if quick else 3)
        )
    ]
    low = [jpeg(2400, 1800, seed=n, quality=30) for n in range(2 if quick else 5)]
    rows = []
    for label, originals, mime in (
        ("4000 x 3000 JPEG photos", photos, "jpeg"),
        ("3000 x 4000 PNG scans", scans, "png"),
        ("2480 x 3508 1-bit PNG scans", bilevel, "png"),
        ("2400 x 1800 JPEG photos at quality 30", low, "jpeg"),
    ):
        reads = [read_file(File(data, name=f"file{n}.{mime}")) for n, data in enumerate(originals)]
        total = sum(len(r.data) for r in reads)
        for rules, detail in (("openai", "high"), ("openai", "low"), ("anthropic", "auto")):
            started = time.perf_counter()
            sent = [wire_file(read, rules, detail) for read in reads]  # type: ignore[arg-type]
            elapsed = (time.perf_counter() - started) / len(reads)
            sent_bytes = sum(len(w.data) for w in sent)
            never_larger = all(len(w.data) <= len(r.data) for w, r in zip(sent, reads, strict=True))
            rows.append(
                Row(
                    GROUP,
                    f"bytes sent, {len(reads)} {label}, {rules}" + (f" detail={detail}" if rules == "openai" else ""),
                    f"{sent_bytes / len(reads) / 1024:,.0f} KB an image ({sent[0].mime})",
                    f"original {total / len(reads) / 1024:,.0f} KB",
                    ratio=total / sent_bytes,
                    target="never more than the original",
                    passed=never_larger,
                    note=f"{elapsed * 1000:.0f} ms to decode, resize and encode one image",
                )
            )
    return rows


def _bilevel(data: bytes) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.open(io.BytesIO(data)).convert("1").save(buffer, format="PNG")
    return buffer.getvalue()


MEASURES = [extraction_rows, token_rows, bytes_rows]


def run(quick: bool) -> list[Row]:
    return run_measures(GROUP, MEASURES, quick)


if __name__ == "__main__":
    from bench.run import table

    found = run("--quick" in sys.argv)
    print(table(found))
    for row in found:
        if row.note:
            print(f"- **{row.group} / {row.benchmark}**: {row.note}")
