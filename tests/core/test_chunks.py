"""core.chunks: pages cut into chunks of at most ``size`` tokens, never inside a word, with overlap, lineage and
the context ``gather`` adds (the previous chunk's tail, or the heading above)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from aiforge.core.chunks import Chunk, document_pages, heading_text, split_pages
from aiforge.core.errors import FileInputError, UsageError
from aiforge.core.tokens import estimate_tokens


def words(count: int, start: int = 0) -> str:
    return " ".join(f"w{i:04d}" for i in range(start, start + count))


def joined_words(chunks: list[Chunk]) -> list[str]:
    return [word for chunk in chunks for word in chunk.text.split()]


@pytest.mark.parametrize("size", [3, 7, 50, 128])
def test_chunks_hold_at_most_size_tokens_and_cover_the_text_word_for_word(size: int) -> None:
    pages = [words(300), words(200, 300), words(5, 500)]
    chunks = split_pages(pages, size)
    assert all(chunk.tokens <= size for chunk in chunks)
    assert joined_words(chunks) == " ".join(pages).split()  # every word once, in order, none cut
    assert [chunk.chunk for chunk in chunks] == list(range(len(chunks)))


def test_a_word_longer_than_a_chunk_is_the_only_thing_cut() -> None:
    chunks = split_pages(["short " + "x" * 30 + " tail"], 4)  # 16 characters a chunk
    assert [chunk.text for chunk in chunks] == ["short", "x" * 16, "x" * 14, "tail"]


def test_a_cut_prefers_a_paragraph_break_then_a_sentence_end_in_the_chunks_second_half() -> None:
    text = "First part of it here.\n\nSecond part goes on. And then on and on without end"
    chunks = split_pages([text], 10)  # 40 characters: the paragraph break at 22 is in the second half
    assert chunks[0].text == "First part of it here."
    chunks = split_pages(["Alpha beta gamma delta. Epsilon zeta eta theta iota kappa"], 10)
    assert chunks[0].text == "Alpha beta gamma delta."


def test_overlap_repeats_the_end_of_each_chunk_at_the_start_of_the_next() -> None:
    chunks = split_pages([words(400)], 40, overlap=10)
    assert all(chunk.tokens <= 40 for chunk in chunks)
    for before, after in zip(chunks, chunks[1:], strict=False):
        shared = [w for w in after.text.split() if w in before.text.split()]
        assert shared and before.text.endswith(" ".join(shared))  # the tail of one is the head of the next
        assert estimate_tokens(" ".join(shared)) <= 10
        assert after.text.startswith(shared[0])  # a word's start, never inside one
    assert sorted(set(joined_words(chunks))) == words(400).split()


def test_by_tokens_runs_across_pages_and_says_where_each_chunk_starts_and_ends() -> None:
    pages = [words(30), words(30, 30), words(30, 60)]  # 30 words of 5 characters: 45 tokens a page
    chunks = split_pages(pages, 40)
    assert (chunks[0].page, chunks[0].last_page) == (1, 1)
    across = [chunk for chunk in chunks if chunk.page != chunk.last_page]
    assert across  # some chunk holds the end of one page and the start of the next
    for chunk in chunks:
        first, last = chunk.text.split()[0], chunk.text.split()[-1]
        assert first in pages[chunk.page - 1].split() and last in pages[chunk.last_page - 1].split()


def test_by_page_is_one_chunk_a_page_a_long_page_cut_further_and_an_empty_page_none() -> None:
    pages = [words(10), "", words(99, 10), words(3, 109)]
    chunks = split_pages(pages, 50, by="page")
    assert all(chunk.page == chunk.last_page and chunk.tokens <= 50 for chunk in chunks)
    assert [chunk.page for chunk in chunks] == [
        1,
        3,
        3,
        3,
        4,
    ]  # page 2 has no text; page 3 is 149 tokens, 33 words a chunk
    assert joined_words([c for c in chunks if c.page == 3]) == pages[2].split()


def test_gather_tail_is_the_previous_chunks_last_tokens_from_a_word_start() -> None:
    chunks = split_pages([words(200)], 30, gather="tail", gather_tokens=8)
    assert chunks[0].context == ""
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.context and before.text.endswith(after.context)
        assert estimate_tokens(after.context) <= 8 and after.context.split()[0] in before.text.split()
        assert after.context not in after.text  # beside the text, not in it (no overlap asked)


DOCUMENT = """# Contract

This agreement is made between the parties named below and covers the services described.

## Payment Terms

Invoices are paid within thirty days. Late payment costs one percent a month.

Termination Clause
Either party may end the agreement with ninety days of notice, in writing."""


def test_gather_heading_is_the_nearest_heading_at_or_above_the_chunk() -> None:
    chunks = split_pages([DOCUMENT], 20, gather="heading")
    by_first_words = {chunk.text.split()[0]: chunk.context for chunk in chunks}
    assert by_first_words["#"] == "Contract"
    assert by_first_words["Invoices"] == "Payment Terms"
    assert chunks[-1].context == "Termination Clause"
    assert split_pages(["no heading here at all, only words."], 5, gather="heading")[0].context == ""


def test_gather_heading_follows_the_pages() -> None:
    chunks = split_pages(["# One\n" + words(50), words(50, 50), "# Two\n" + words(10, 100)], 30, gather="heading")
    assert {chunk.context for chunk in chunks if chunk.page < 3} == {"One"}
    assert chunks[-1].context == "Two"


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("# Title", "Title"),
        ("### Deep Down ###", "Deep Down"),
        ("Payment Terms", "Payment Terms"),
        ("3.2 Error Analysis", "3.2 Error Analysis"),
        ("TERMS AND CONDITIONS", "TERMS AND CONDITIONS"),
        ("Results of the Study", "Results of the Study"),
        ("The results were good.", None),
        ("the end of a wrapped sentence", None),
        ("Summary:", None),
        ("A Very Long Line Of Title Case Words That Goes On Far Too Long To Be A Heading Really", None),
        ("#hashtag", None),
        ("", None),
        ("42", None),
    ],
)
def test_what_is_a_heading(line: str, heading: str | None) -> None:
    assert heading_text(line) == heading


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 10, "overlap": 10}, "overlap=10 must be less than the chunk size"),
        ({"size": 0}, "size= is a whole number of tokens of at least 1"),
        ({"size": 10, "by": "words"}, 'by= is "page" or "tokens"'),
        ({"size": 10, "gather": "previous"}, 'gather= is None, "tail" or "heading"'),
        ({"size": 10, "overlap": -1}, "overlap= is a whole number"),
    ],
)
def test_arguments_that_cannot_be_used_say_which_and_what_can(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        split_pages(["text"], **kwargs)


def test_a_text_is_one_page_or_pages_at_form_feeds() -> None:
    assert document_pages("one page") == ["one page"]
    assert document_pages("page one\fpage two") == ["page one", "page two"]


def test_a_document_that_cannot_be_split_is_a_file_input_error_naming_it(tmp_path: Path) -> None:
    from PIL import Image

    with pytest.raises(FileInputError, match=r"gone\.pdf: no such file"):
        document_pages(tmp_path / "gone.pdf")
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, format="PNG")
    with pytest.raises(FileInputError, match="an image .image/png. has no text to split"):
        document_pages(buffer.getvalue())
    with pytest.raises(UsageError, match="split reads text .str. or files"):
        document_pages(42)
    (tmp_path / "real.pdf").write_bytes(b"%PDF-1.4")
    with pytest.raises(UsageError, match=r"real\.pdf' is a str, so it is split as text; a file is a pathlib\.Path"):
        document_pages(str(tmp_path / "real.pdf"))
    assert document_pages("see the attached report.pdf") == ["see the attached report.pdf"]
