"""``aiforge batch``'s files besides input and output: the automatic checkpoint, and the rescue of answers.

A re-run is a new process, so memory cannot carry an interrupted batch's finished rows to it. Without
``--checkpoint``, the command checkpoints into a file of its own under the store's folder (when the ``STORE``
setting is on): each row is written as it lands, the same command again runs only the rest, and the file is
removed once the result is written. If writing the result fails anyway, the answers go to a JSONL file
(``rescue``) rather than being lost.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

AUTO_FOLDER = "batches"
"""The folder, beside the store's file, of the automatic checkpoints."""


def auto_checkpoint(args: argparse.Namespace, schema: dict[str, Any] | None) -> Path | None:
    """The automatic checkpoint file of this command (its input, prompt, typing and model flags); None when
    the ``STORE`` setting is off or in memory."""
    from aiforge.core.settings import load_settings
    from aiforge.store import fingerprint
    from aiforge.store.db import default_path

    store = load_settings().STORE
    if store is False or store == "memory":
        return None
    folder = Path(default_path("data") if store is True else store).expanduser().resolve().parent / AUTO_FOLDER
    command = {
        "input": str(Path(args.input).resolve()),
        **{flag: getattr(args, flag) for flag in ("prompt", "labels", "provider", "model", "temperature")},
        **{flag: getattr(args, flag) for flag in ("max_tokens", "quality")},
        "schema": schema,
    }
    return folder / f"{fingerprint(command)[:24]}.sqlite"


def discard(path: Path) -> None:
    """Remove a checkpoint file (and SQLite's companions), closing the store that has it open."""
    from aiforge.store import Store

    store = Store.for_setting(path, kind="data") if path.exists() else None
    if store is not None:
        store.close()
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        (path.parent / name).unlink(missing_ok=True)


def check_target(path: Path) -> None:
    """Raise ``OSError`` naming the problem when ``path`` cannot be written (its folder missing or read-only)."""
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder")
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"there is no folder {folder}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise PermissionError(f"{path} cannot be written here")


def rescue(frame: Any, target: Path) -> Path:
    """Write ``frame`` as JSONL beside ``target``, else in the working folder, else the temp folder; its path."""
    name = f"{target.stem}.rescued.jsonl"
    text = frame.to_json(orient="records", lines=True, date_format="iso", force_ascii=False)
    failure: OSError | None = None
    for folder in (target.parent, Path.cwd(), Path(tempfile.gettempdir())):
        path = _free(folder / name)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            failure = exc
            continue
        return path
    assert failure is not None
    raise failure


def _free(path: Path) -> Path:
    """``path``, or ``path`` with a number before ``.jsonl`` when that file exists already."""
    number = 1
    candidate = path
    while candidate.exists():
        number += 1
        candidate = path.with_name(path.name.replace(".rescued.jsonl", f".rescued-{number}.jsonl"))
    return candidate
