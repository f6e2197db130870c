"""Which path a batch's files take, decided once per batch, and a file value filled into its row's prompt.

A provider that reads a kind of file natively (``Provider.reads_files``) is sent the file's marker
(``core.files.remember``), which its wire module turns into the vendor's block; a provider that does not is sent a
PDF's text, extracted locally page by page (``"[page N]"`` before each page's text). An image has no text path:
an image for a provider that cannot see is a ``UsageError`` naming those that can, before any request.

``FILE_INPUT`` overrides the choice: ``"native"`` sends markers to any provider with a wire for files (a vision
model behind vLLM), ``"text"`` extracts PDFs locally even where the provider reads them.

A file that cannot be sent (missing, unreadable, an encrypted or broken PDF, a corrupt image, a scan with no text
on the text path, over the provider's limits) is a ``FileInputError`` for its row alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiforge.core.errors import FileInputError, UsageError
from aiforge.core.files import FileKind, ReadFile, read_file, remember

FileRules = Literal["openai", "anthropic"]
"""Whose published rules count and limit a provider's files (``core.file_rules``)."""
FileInput = Literal["auto", "native", "text"]
"""The ``FILE_INPUT`` setting."""
FilePath = Literal["native", "text"]

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
    detail: str = "auto"
    seeing: tuple[str, ...] = ()
    """The providers that read images, for the error an image on the text path is."""
    setting: FileInput = "auto"

    def path(self, kind: FileKind) -> FilePath:
        return "native" if kind in self.native else "text"

    def fill(self, value: Any) -> tuple[str, ReadFile]:
        """``value`` as it goes in the prompt (its marker or its PDF's text) and the file read; ``FileInputError``
        for this row when it cannot be sent, ``UsageError`` for an image on the text path."""
        read = read_file(value)
        if read.kind in self.native:
            check_sendable(read, self.rules)
            return remember(read), read
        if read.kind == "image":
            raise UsageError(self.image_refused(read.name))
        return pdf_text(read), read

    def image_refused(self, name: str) -> str:
        if self.setting == "text":
            return (
                f"{name}: an image has no text to extract, and FILE_INPUT='text' sends files as text; set "
                "FILE_INPUT='auto' to send it to a provider that reads images."
            )
        seeing = ", ".join(self.seeing) or "openai, anthropic"
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
    detail: str = "auto",
    seeing: Sequence[str] = (),
) -> FileRoute:
    """The route of a batch's files on ``provider``/``model`` (its class's ``reads_files`` and ``file_rules``) as
    ``FILE_INPUT`` (``setting``) says; ``UsageError`` for ``native`` on a provider that can send no file."""
    if setting == "native":
        if rules is None:
            raise UsageError(
                f"FILE_INPUT='native': the {provider} provider sends text only, so no file can go as it is; set "
                "FILE_INPUT='auto' (a PDF's text extracted locally) or use a provider that reads files."
            )
        native: frozenset[FileKind] = frozenset(FILE_KINDS)
    elif setting == "text":
        native = frozenset()
    else:
        native = frozenset(reads) if model_reads_files(model) else frozenset()
    return FileRoute(native, rules, model, provider, detail, tuple(seeing), setting)


def pdf_text(read: ReadFile) -> str:
    """A PDF's text, ``"[page N]"`` before each page's; ``FileInputError`` for an encrypted or broken PDF, or one
    with no text at all (a scan)."""
    from aiforge.core.pdfs import pdf_page_texts

    texts = pdf_page_texts(read)
    if not any(text.strip() for text in texts):
        raise FileInputError(
            f"{read.name}: the PDF has no text layer (a scan?); use a provider that reads PDFs (openai, anthropic: "
            "FILE_INPUT='auto'), or OCR it first."
        )
    return "\n\n".join(f"[page {n}]\n{text.strip()}" for n, text in enumerate(texts, 1))


def check_sendable(read: ReadFile, rules: FileRules | None) -> None:
    """``FileInputError`` when ``read`` cannot be sent as it is: a corrupt image, an encrypted or broken PDF, or over
    the limits of ``rules``' provider (bytes, pixels, pages)."""
    from aiforge.core.file_rules import check_limits

    check_limits(read, rules or "openai")
