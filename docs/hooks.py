"""The site's build hooks (mkdocs.yml ``hooks:``): what the pages take from the code and the checkout, not copies.

- ``on_files``: the tutorials, ``notebooks/*.ipynb``, join the site as ``tutorials/<name>.ipynb`` without being
  copied into ``docs/`` (mkdocs-jupyter renders them with their stored outputs; ``mkdocs serve`` watches
  ``notebooks/``, so an edited tutorial reloads).
- ``on_page_markdown``: a line that is ``<!-- settings-table -->`` becomes the table of every ``AIForgeSettings`` field
  (name, environment variable, default, type, description), read from ``aiforge/core/settings.py`` by griffe
  (the field docstrings) and pydantic (defaults, types, environment names): a new setting is on the page the
  next build. ``<!-- errors-table -->`` does the same for every error and warning in ``aiforge/core/errors.py``.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TUTORIALS = "tutorials"
SETTINGS_MARKER = "<!-- settings-table -->"
ERRORS_MARKER = "<!-- errors-table -->"


@event_priority(100)  # before mkdocs-jupyter's on_files, which wraps every .ipynb file it is given
def on_files(files: Files, config: Any) -> Files:
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        files.append(File.generated(config, f"{TUTORIALS}/{notebook.name}", abs_src_path=str(notebook)))
    return files


def on_nav(nav: Any, config: Any, files: Files) -> Any:
    """mkdocs-jupyter's wrapper of a file (``NotebookFile``) computes ``abs_src_path`` from ``src_dir``, which a
    generated file has not: give the wrapper the notebook's path, which the wrapped file knows."""
    for file in files:
        inner = getattr(file, "file", None)
        if file.src_uri.startswith(f"{TUTORIALS}/") and inner is not None and file.abs_src_path is None:
            file.abs_src_path = inner.abs_src_path
    return nav


def on_page_context(context: Any, page: Any, config: Any, nav: Any) -> Any:
    """A tutorial hides the right-hand table of contents (``hide: [toc]``): its wide code and DataFrames get the
    column's whole width (docs/stylesheets/extra.css lets what is still wider scroll)."""
    if page.file.src_uri.startswith(f"{TUTORIALS}/"):
        hide = page.meta.setdefault("hide", [])
        if "toc" not in hide:
            hide.append("toc")
    return context


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """A marker on a line of its own becomes its table (quoted in a sentence or in code, it stays as written)."""
    for marker, table in ((SETTINGS_MARKER, settings_table), (ERRORS_MARKER, errors_table)):
        pattern = re.compile(rf"^{re.escape(marker)}[ \t]*$", re.M)
        if pattern.search(markdown):
            rows = table()
            markdown = pattern.sub(lambda _, rows=rows: rows, markdown)
    return markdown


def _griffe_module(name: str) -> Any:
    import griffe

    return griffe.load(name, search_paths=[str(ROOT)], docstring_parser="google")


def _cell(text: str) -> str:
    """One Markdown table cell: no line breaks, whitespace collapsed, pipes escaped (except in code spans, where the
    tables extension never splits)."""
    parts = re.split(r"(`[^`]*`)", re.sub(r"\s+", " ", text).strip())
    return "".join(part if part.startswith("`") else part.replace("|", "\\|") for part in parts)


def _type_name(annotation: Any) -> str:
    """A field's type as a reader writes it: ``str | None``, ``"auto" | "off"``, ``dict[str, float]``."""
    import types
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "None"
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(repr(value).replace("'", '"') for value in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(arg) for arg in args)}]"
    return getattr(annotation, "__name__", str(annotation))


def settings_table() -> str:
    """Every ``AIForgeSettings`` field as a Markdown table, in the class's order."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import typing

    from pydantic import BaseModel

    from aiforge.core.setting_sources import ENV_PREFIX, STANDARD_ENV
    from aiforge.core.settings import AIForgeSettings

    documented = _griffe_module("aiforge.core.settings")["AIForgeSettings"].members
    rows = [
        '<div class="settings-table" markdown>',
        "",
        "| Setting and environment variable | Default and type | Description |",
        "|---|---|---|",
    ]
    for name, field in AIForgeSettings.model_fields.items():
        docstring = documented[name].docstring if name in documented else None
        if docstring is None:
            raise ValueError(
                f"AIForgeSettings.{name} has no docstring (aiforge/core/settings.py): the settings table "
                "(docs/hooks.py) needs one line saying what it does"
            )
        env_name = ENV_PREFIX + (name.upper() if name.islower() else name)  # a section: AIFORGE_CHAT
        env = f"`{env_name}`" if name not in STANDARD_ENV else f"`{name}` or `{env_name}`"
        annotation = field.annotation
        section = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        if typing.get_origin(annotation) is dict or section:
            env += " (JSON)"  # a mapping or a section is read from the environment as JSON
        default = field.get_default(call_default_factory=True)
        if section:  # its keys are the rows below, not the section's repr
            keys = ", ".join(f"`{name}.{key}`" for key in annotation.model_fields)
            cells = [f"`{name}`<br>{env}", f"a section: {keys}", docstring.value]
        else:
            cells = [f"`{name}`<br>{env}", f"`{_default_text(default)}`<br>`{_type_name(annotation)}`", docstring.value]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
        if section:
            rows += _section_rows(name, annotation, env_name)
    rows += ["", "</div>"]
    return "\n".join(rows) + "\n"


def _default_text(default: Any) -> str:
    return f'"{default}"' if isinstance(default, str) else repr(default)


def _section_rows(name: str, section: Any, env_name: str) -> list[str]:
    """A section's keys (``chat.system_prompt``), each a row: set in the YAML section or the section's JSON."""
    documented = _griffe_module("aiforge.core.settings")[section.__name__].members
    rows = []
    for key, field in section.model_fields.items():
        doc = documented[key].docstring if key in documented else None
        text = doc.value if doc is not None else f"A key of the `{name}:` section (above)."
        example = f"`{env_name}='{{\"{key}\": ...}}'`"
        default = field.get_default(call_default_factory=True)
        cells = [
            f"`{name}.{key}`<br>{example}",
            f"`{_default_text(default)}`<br>`{_type_name(field.annotation)}`",
            text,
        ]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return rows


def errors_table() -> str:
    """Every error and warning ``aiforge`` exports, with its base classes and first docstring paragraph."""
    module = _griffe_module("aiforge.core.errors")
    rows = ["| Error | Is a | When |", "|---|---|---|"]
    for name, member in module.members.items():
        if name.startswith("_") or member.is_alias or not member.is_class:
            continue
        bases = ", ".join(str(base) for base in member.bases)
        first = member.docstring.value.split("\n\n", 1)[0] if member.docstring else ""
        rows.append(f"| [`{name}`][aiforge.{name}] | `{_cell(bases)}` | {_cell(html.escape(first, quote=False))} |")
    return "\n".join(rows) + "\n"
