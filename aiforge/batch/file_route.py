"""A batch's file route, decided once from its provider's declared capability and ``FILE_INPUT``
(``core.file_inputs``), and what it rules out (``pack=`` with files sent as the provider's blocks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiforge.core.file_inputs import FileRoute, file_route
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.core.templates import BatchPrompts


def file_route_of(owner: BatchOwner) -> FileRoute:
    """How ``owner``'s batch sends its files: read off its provider's class (``reads_files``, ``file_rules``) and the
    ``FILE_INPUT`` and ``IMAGE_DETAIL`` settings."""
    from aiforge.providers import file_reading_providers

    provider, settings = owner.provider, owner.settings
    return file_route(
        provider=owner.provider_name,
        model=owner.model,
        reads=getattr(provider, "reads_files", ()),
        rules=getattr(provider, "file_rules", None),
        setting=settings.FILE_INPUT,
        detail=settings.IMAGE_DETAIL,
        seeing=lambda: file_reading_providers("image"),
    )


def check_packable_files(prompts: BatchPrompts, pack: int) -> None:
    """A ``UsageError`` for ``pack=`` > 1 when a file goes as the provider's block: a packed request lists its rows
    as text under their ids. A PDF on the text path is text, and packs."""
    if pack <= 1:
        return
    native = [name for name, kinds in prompts.file_paths.items() if "native" in kinds.values()]
    if native:
        raise UsageError(
            f"pack={pack} cannot send the files of column {native[0]!r}: a packed request lists its rows as text. "
            "Use pack=1 (the default), or FILE_INPUT='text' to pack PDFs' extracted text."
        )
