"""``aiforge.files("invoices/*.pdf")``: a folder of documents and images listed as a DataFrame, one row per file,
ready to be a file column (``df.aiforge.extract("file", output=Invoice)``).

Columns: ``file`` (an ``aiforge.File``: a path, read when a batch builds its prompts, on the Dask worker for a
partition), ``name``, ``size`` (bytes), ``pages`` (a PDF's page count; ``<NA>`` for an image, or a PDF that cannot
be opened: its row fails alone when asked), ``mime`` (from the file's leading bytes; ``<NA>`` for a kind aiforge
does not send). Sorted by path.

A folder lists every file in it, documents or not: a ``notes.txt`` or an empty file is a row with ``mime`` ``<NA>``,
and when a batch asks that row it fails alone (``FileInputError``: not a PDF or an image) while the others are
answered. Keep only what aiforge sends with ``listed[listed["mime"].notna()]``, or list with a glob
(``"invoices/*.pdf"``).

Dask: ``dd.from_pandas`` turns an object column into strings by default (``dataframe.convert-string``), and a
``File``'s string is its path: name that column in ``files=`` (``ddf.aiforge.extract("file", output=Invoice,
files=["file"])``), or keep the ``File`` objects with ``dask.config.set({"dataframe.convert-string": False})``. Either
way the workers read the files, from their paths.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from aiforge.core.errors import FileInputError
from aiforge.core.files import File, sniff_mime
from aiforge.core.types import UsageError

FILE_COLUMNS = ("file", "name", "size", "pages", "mime")
_GLOB_CHARS = frozenset("*?[")


def files(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The files of ``source`` (a folder: the files directly in it; a glob, ``"scans/**/*.png"``; or a list of
    paths), one row each, sorted by path; a folder or glob that holds no file is a ``UsageError`` naming it."""
    paths = sorted(_paths(source), key=str)
    rows = [_row(path) for path in paths]
    frame = pd.DataFrame(rows, columns=list(FILE_COLUMNS))
    return frame.astype({"name": "string", "size": "Int64", "pages": "Int64", "mime": "string"})


def _paths(source: Any) -> list[Path]:
    if isinstance(source, (str, os.PathLike)):
        text = os.path.expanduser(os.fspath(source))
        if os.path.isdir(text):
            found = [path for path in Path(text).iterdir() if path.is_file() and not path.name.startswith(".")]
            if not found:
                raise UsageError(f"aiforge.files({os.fspath(source)!r}): the folder holds no file.")
            return found
        if _GLOB_CHARS.isdisjoint(text):
            if not os.path.exists(text):
                raise UsageError(f"aiforge.files({os.fspath(source)!r}): no such file or folder.")
            return [Path(text)]
        found = [Path(match) for match in glob.glob(text, recursive=True) if os.path.isfile(match)]
        if not found:
            raise UsageError(
                f"aiforge.files({os.fspath(source)!r}): no file matches the pattern; check the folder and the "
                "extension (a glob such as 'invoices/*.pdf', or a folder)."
            )
        return found
    if isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray)):
        if not all(isinstance(item, (str, os.PathLike)) for item in source):
            raise UsageError("aiforge.files() takes a folder, a glob, or a list of paths (str or pathlib.Path).")
        return [Path(os.path.expanduser(os.fspath(item))) for item in source]
    raise UsageError(
        "aiforge.files() takes a folder, a glob, or a list of paths (str or pathlib.Path), "
        f"not {type(source).__name__}."
    )


def _row(path: Path) -> dict[str, Any]:
    file = File(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(1024)
    except OSError:
        return {"file": file, "name": path.name, "size": None, "pages": None, "mime": None}
    mime = sniff_mime(head)
    return {"file": file, "name": path.name, "size": size, "pages": _pages(file, mime), "mime": mime}


def _pages(file: File, mime: str | None) -> int | None:
    if mime != "application/pdf":
        return None
    from aiforge.core.pdfs import pdf_pages

    try:
        return pdf_pages(file.read(), file.name)
    except FileInputError:  # encrypted or broken: its row fails alone when a batch asks it, with the reason
        return None
