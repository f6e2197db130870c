"""A cascade's files: every model it asks takes the prompts built once, for the agent ``run_batch`` is called on.

A row's file goes in its prompt as a marker (sent as the vendor's block) or as a PDF's extracted text, decided
once for the batch (``batch.file_route``). A cascade sends those prompts as they are to its ``first`` model and
to ``then``: a kind of file sent as a marker must be one every model asked reads, or the cascade is a
``UsageError`` before any request. ``first="proxy"`` embeds the prompts' text, so every file must go as text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiforge.batch.cascade.spec import LOCAL, PROXY, Cascade
from aiforge.batch.file_route import file_route_of
from aiforge.core.file_inputs import file_route
from aiforge.core.types import UsageError

if TYPE_CHECKING:
    from aiforge.batch.owner import BatchOwner
    from aiforge.core.files import FileKind
    from aiforge.core.templates import BatchPrompts

_PLURAL = {"image": "images", "pdf": "PDFs"}


def sent_as_files(prompts: BatchPrompts) -> list[FileKind]:
    """The kinds of file the prompts carry as markers (the owner's native route), in a fixed order."""
    kinds = {kind for paths in prompts.file_paths.values() for kind, path in paths.items() if path == "native"}
    return sorted(kinds)


def unread_kinds(owner: BatchOwner | str, strong: BatchOwner, kinds: list[FileKind]) -> list[FileKind]:
    """The ``kinds`` that ``owner`` (an agent, or ``"local"``: the embedded model) cannot be sent as files."""
    if owner == LOCAL:
        from aiforge.providers import builtin_class

        local = builtin_class(LOCAL)  # read from the class: the weights load only when the cascade runs
        route = file_route(
            provider=LOCAL,
            model=LOCAL,
            reads=local.reads_files,
            rules=local.file_rules,
            setting=strong.settings.FILE_INPUT,
        )
    else:
        assert not isinstance(owner, str)
        route = file_route_of(owner)
    return [kind for kind in kinds if route.rules is None or route.path(kind) != "native"]


def check_cascade_files(cascade: Cascade, owner: BatchOwner, strong: BatchOwner, prompts: BatchPrompts) -> None:
    """A one-line ``UsageError`` when a model of ``cascade`` cannot take the files ``owner``'s prompts send as files
    (``first="proxy"``: any file not sent as text)."""
    kinds = sent_as_files(prompts)
    if not kinds:
        return
    named = " and ".join(_PLURAL[kind] for kind in kinds)
    sent = f"the rows' {named} go to {owner.model} ({owner.provider_name}) as files"
    as_text = "set FILE_INPUT='text' on the agent so every model gets the PDFs' extracted text"
    if cascade.first == PROXY:
        fix = as_text if kinds == ["pdf"] else "use first= an agent whose model reads images"
        raise UsageError(f"Cascade(first='proxy') embeds each row's text, but {sent}; {fix}")
    models: list[tuple[str, BatchOwner | str]] = [("first", cascade.first)]
    if cascade.then is not None and cascade.then is not owner:
        models.append(("then", cascade.then))
    for role, model in models:
        unread = unread_kinds(model, strong, kinds)
        if not unread:
            continue
        name = "the embedded model (local)" if model == LOCAL else _named(model)
        missing = " and ".join(_PLURAL[kind] for kind in unread)
        fixes = [f"a {role} model that reads {missing} (an agent on openai or anthropic)"]
        if unread == ["pdf"]:
            fixes.append(as_text)
        raise UsageError(f"Cascade({role}=...): {sent}, and {name} cannot read {missing}; use " + ", or ".join(fixes))


def _named(model: BatchOwner | str) -> str:
    assert not isinstance(model, str)
    return f"{model.model} ({model.provider_name})"
