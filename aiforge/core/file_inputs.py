"""Which path a batch's files take, decided once per batch, and a file value filled into its row's prompt.

A provider that reads a kind of file natively (``Provider.reads_files``) is sent the file's marker
(``core.file_markers.remember``), which its wire module turns into the vendor's block; a provider that does not is
sent a PDF's text, extracted locally page by page (``"[page N]"`` before each page's text). An image has no text path:
an image for a provider that cannot see is a ``UsageError`` naming those that can, before any request.

``FILE_INPUT`` overrides the choice: ``"native"`` sends markers to any provider with a wire for files (a vision
model behind vLLM), ``"text"`` extracts PDFs locally even where the provider reads them.

A file that cannot be sent (missing, unreadable, an encrypted or broken PDF, a corrupt image, a scan with no text
on the text path, over the provider's limits) is a ``FileInputError`` for its row alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiforge.core.errors import FileInputError, UsageError
from aiforge.core.file_markers import remember
from aiforge.core.files import File, FileKind, ReadFile, file_name, is_file_value, read_file

FileRules = Literal["openai", "anthropic"]
"""Whose published rules count and limit a provider's files (``core.file_rules``)."""
FileInput = Literal["auto", "native", "text"]
"""The ``FILE_INPUT`` setting."""
FilePath = Literal["native", "text"]
ImageDetail = Literal["auto", "low", "high"]
"""The ``IMAGE_DETAIL`` setting."""

TEXT_ONLY_MODELS: tuple[str, ...] = (
    "gpt-3.5",
    "gpt-4-0314",
    "gpt-4-0613",
    "gpt-4-32k",
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "davinci",
    "babbage",
    "claude-2",
    "claude-instant",
)
"""Model-name prefixes of models that read no image nor PDF though their provider does (OpenAI's model pages:
GPT-3.5, the first GPT-4 snapshots, o1-mini and o3-mini take text only; Anthropic: before Claude 3). Plain
``"gpt-4"`` is the first GPT-4 as well."""

FILE_KINDS: tuple[FileKind, ...] = ("image", "pdf")


def model_reads_files(model: str) -> bool:
    """Whether ``model`` reads images and PDFs where its provider does (``TEXT_ONLY_MODELS``)."""
    name = model.lower().rsplit("/", 1)[-1]
    return name != "gpt-4" and not name.startswith(TEXT_ONLY_MODELS)


@dataclass(frozen=True, slots=True)
class FileRoute:
    """How a batch's files go: the kinds sent as markers, and whose rules count and limit them."""

    native: frozenset[FileKind]
    rules: FileRules | None
    model: str
    provider: str
    detail: ImageDetail = "auto"
    seeing: Callable[[], Sequence[str]] | None = None
    """The providers that read images, for the error an image on the text path is (asked only then)."""
    setting: FileInput = "auto"

    def path(self, kind: FileKind) -> FilePath:
        return "native" if kind in self.native else "text"

    def fill(self, value: Any, done: dict[str, str] | None = None) -> tuple[str, ReadFile]:
        """``value`` as it goes in the prompt (its marker or its PDF's text) and the file read; ``FileInputError``
        for this row when it cannot be sent, ``UsageError`` for an image on the text path. ``done``: what the files
        of this batch filled, by digest (a file repeated over rows is checked and extracted once)."""
        if self.setting == "native" and self.rules is None:
            raise UsageError(
                f"FILE_INPUT='native': the {self.provider} provider sends text only, so no file can go as it is; set "
                "FILE_INPUT='auto' (a PDF's text extracted locally) or use a provider that reads files."
            )
        read = read_file(value)
        if done is not None and read.digest in done:
            return done[read.digest], read
        if read.kind in self.native:
            check_sendable(read, self.rules)
            filled = remember(read)
        elif read.kind == "image":
            raise UsageError(self.image_refused(read.name))
        else:
            filled = pdf_text(read)
        if done is not None:
            done[read.digest] = filled
        return filled, read

    def image_refused(self, name: str) -> str:
        if self.setting == "text":
            return (
                f"{name}: an image has no text to extract, and FILE_INPUT='text' sends files as text; set "
                "FILE_INPUT='auto' to send it to a provider that reads images."
            )
        seeing = ", ".join(self.seeing() if self.seeing is not None else ()) or "openai, anthropic"
        return (
            f"{name}: {self.provider} ({self.model}) cannot see images; use a provider that does ({seeing}, "
            "with a vision model), or FILE_INPUT='native' for a vision model behind a local server."
        )


def file_route(
    *,
    provider: str,
    model: str,
    reads: Sequence[FileKind],
    rules: FileRules | None,
    setting: FileInput = "auto",
    detail: ImageDetail = "auto",
    seeing: Callable[[], Sequence[str]] | None = None,
) -> FileRoute:
    """The route of a batch's files on ``provider``/``model`` (its class's ``reads_files`` and ``file_rules``) as
    ``FILE_INPUT`` (``setting``) says; a file on it is a ``UsageError`` for ``native`` on a provider that can send
    no file (``rules`` None)."""
    if setting == "native":
        native: frozenset[FileKind] = frozenset(FILE_KINDS)
    elif setting == "text":
        native = frozenset()
    else:
        native = frozenset(reads) if model_reads_files(model) else frozenset()
    return FileRoute(native, rules, model, provider, detail, seeing, setting)


def pdf_text(read: ReadFile) -> str:
    """A PDF's text, ``"[page N]"`` before each page's; ``FileInputError`` for an encrypted or broken PDF, or one
    with no text at all (a scan)."""
    from aiforge.core.pdfs import pdf_page_texts

    texts = pdf_page_texts(read.data, read.name)
    if not any(text.strip() for text in texts):
        raise FileInputError(
            f"{read.name}: the PDF has no text layer (a scan?); use a provider that reads PDFs (openai, anthropic: "
            "FILE_INPUT='auto'), or OCR it first."
        )
    return "\n\n".join(f"[page {n}]\n{text.strip()}" for n, text in enumerate(texts, 1))


def check_sendable(read: ReadFile, rules: FileRules | None) -> None:
    """``FileInputError`` when ``read`` cannot be sent as it is: an encrypted or broken PDF, or one over ``rules``'
    provider's bytes or pages (``core.file_rules.wire_file`` checks them as the wire will); a corrupt image. An image
    is resized only when sent: one still over the vendor's bytes after that fails its row then."""
    if read.kind == "pdf":
        from aiforge.core.file_rules import wire_file

        wire_file(read, rules or "openai")  # opens it (its pages): encrypted or broken fails here, too
    else:
        from aiforge.core.images import image_size

        image_size(read.data, read.name)  # decodes its header: a corrupt image fails here


NATIVE_DEFAULT = FileRoute(frozenset(FILE_KINDS), None, "", "")
"""The route of prompts built with no batch's decision (a Batch API job rebuilding its prompts): markers."""


def is_file_cell(value: Any, name: Any, files: Sequence[Any]) -> bool:
    """Whether a row's ``value`` of field ``name`` is a file: by its type, or a str in a ``files=`` column."""
    return is_file_value(value) or (isinstance(value, str) and name in files)


def fill_files(
    rows: list[dict[Any, Any]],
    fields: Sequence[Any],
    files: Sequence[Any],
    route: FileRoute | None,
    skip: Collection[int] = (),
    held: list[File] | None = None,
    names: dict[int, list[str]] | None = None,
) -> tuple[dict[int, FileInputError], dict[Any, dict[FileKind, FilePath]]]:
    """Each file value of ``rows`` (in place) replaced by what its prompt carries (``FileRoute.fill``); the rows
    whose file cannot be sent (their value the file's name, ``[file: x.pdf]``, for whoever reads the row) and, per
    field, the path each kind of file took. ``held`` gets each file read (the registry holds an in-memory file by a
    weak reference only: the batch holding them keeps them until it is done); ``names`` each row's file names."""
    route = route or NATIVE_DEFAULT
    failed: dict[int, FileInputError] = {}
    paths: dict[Any, dict[FileKind, FilePath]] = {}
    done: dict[str, str] = {}
    pages: dict[str, int] = {}
    for i, row in enumerate(rows):
        if i in skip:
            continue
        sent: dict[Any, ReadFile] = {}
        for name in fields:
            value = row[name]
            if not is_file_cell(value, name, files):
                continue
            if names is not None:
                names.setdefault(i, []).append(file_name(value))
            try:
                row[name], read = route.fill(value, done)
            except FileInputError as exc:
                failed.setdefault(i, exc)
                row[name] = f"[file: {file_name(value)}]"
                continue
            if held is not None:
                held.append(read.file)
            paths.setdefault(name, {})[read.kind] = route.path(read.kind)
            if read.kind in route.native:
                sent[name] = read
        if i in failed or len(sent) < 2:
            continue
        over = over_request_limits(list(sent.values()), route.rules, pages)
        if over is not None:
            failed[i] = FileInputError(over)
            for name in sent:
                row[name] = ""
    return failed, paths


def over_request_limits(reads: Sequence[ReadFile], rules: FileRules | None, pages: dict[str, int]) -> str | None:
    """Why the files ``reads`` of one request are over ``rules``' vendor's limits for a request together (images,
    PDF pages, PDF bytes), or None; each file alone is checked as it is filled. ``pages``: PDF pages by digest."""
    from aiforge.core.file_rules import LIMITS, MB, VENDOR_NAMES
    from aiforge.core.pdfs import pdf_pages

    limits, vendor = LIMITS[rules or "openai"], VENDOR_NAMES[rules or "openai"]
    images = [read.name for read in reads if read.kind == "image"]
    pdfs = [read for read in reads if read.kind == "pdf"]
    if len(images) > limits.images_per_request:
        shown = ", ".join(images[:3]) + (f" and {len(images) - 3} more" if len(images) > 3 else "")
        return (
            f"{shown}: {len(images)} images, over {vendor}'s {limits.images_per_request} images a request; send "
            "them over several rows."
        )
    size = sum(len(read.data) for read in pdfs)
    if size > limits.pdf_bytes:
        return (
            f"{', '.join(read.name for read in pdfs)}: {size / MB:.1f} MB of PDF together, over {vendor}'s "
            f"{limits.pdf_bytes / MB:.1f} MB a request; send them in separate rows, or their text (FILE_INPUT='text')."
        )
    for read in pdfs:
        if read.digest not in pages:
            pages[read.digest] = pdf_pages(read.data, read.name)
    total = sum(pages[read.digest] for read in pdfs)
    if total > limits.pdf_pages:
        return (
            f"{', '.join(read.name for read in pdfs)}: {total} pages together, over {vendor}'s {limits.pdf_pages} "
            "pages a request; send them in separate rows, or their text (FILE_INPUT='text')."
        )
    return None


def paths_text(paths: dict[Any, dict[FileKind, FilePath]]) -> str:
    """``"invoice: PDFs as their text; photo: images sent as files"``: the path each file column took, for the
    estimate."""
    plural = {"pdf": "PDFs", "image": "images"}
    how = {"native": "sent as files", "text": "as their text, extracted here"}
    return "; ".join(
        f"{name}: " + ", ".join(f"{plural[kind]} {how[path]}" for kind, path in sorted(kinds.items()))
        for name, kinds in paths.items()
    )
