"""The files of this process's prompts, by digest: a marker ``[[file:<digest>]]`` made (``remember``), found again
(``reread``, ``split_markers`` for the wire) and shown to a person (``shown``). ``core.files`` is what a file is."""

from __future__ import annotations

import re
import threading
import weakref

from aiforge.core.errors import FileInputError
from aiforge.core.files import File, ReadFile, read_file

MARKER = re.compile(r"\[\[file:([0-9a-f]{32})\]\]")
"""A file's place in a prompt text; group 1 is its digest."""


_known: dict[str, list[File | weakref.ref[File]]] = {}
"""Digest -> every file seen with those bytes, newest first: a file with a path held as it is (a path is cheap,
and the bytes are read again when sent), one held in memory by a weak reference (the batch that put its marker in
a prompt holds it, ``BatchPrompts.held``), so the registry never keeps a process's images alive."""
_known_lock = threading.Lock()
_sweep_at = 1024


def remember(read: ReadFile) -> str:
    """``read``'s marker, its file remembered (first among the files with its bytes) so the wire can send it."""
    global _sweep_at
    file = read.file
    with _known_lock:
        seen = [entry for entry in _known.get(read.digest, ()) if _live(entry) not in (None, file)]
        _known[read.digest] = [file if file.path is not None else weakref.ref(file), *seen]
        if len(_known) > _sweep_at:  # drop the digests whose in-memory files are all gone
            for digest in [d for d, entries in _known.items() if all(_live(e) is None for e in entries)]:
                del _known[digest]
            _sweep_at = max(1024, 2 * len(_known))
    return read.marker


def _live(entry: File | weakref.ref[File]) -> File | None:
    return entry if isinstance(entry, File) else entry()


def split_markers(text: str) -> list[str | ReadFile]:
    """``text`` cut at its markers: the text between them (empty pieces dropped) and each marker's file, read again
    and checked to be the bytes the marker names; ``FileInputError`` when a file is gone or has changed. A marker
    whose digest no batch of this process read is text (a user's text that happens to look like one)."""
    pieces: list[str | ReadFile] = []
    at = 0
    for match in MARKER.finditer(text):
        if not known_files(match.group(1)):
            continue
        if match.start() > at:
            pieces.append(text[at : match.start()])
        pieces.append(reread(match.group(1)))
        at = match.end()
    if at < len(text):
        pieces.append(text[at:])
    return pieces


def shown(text: str) -> str:
    """``text`` as a person reads it (a results table, the turn log, a trace): each marker ``[file: receipt.png]``
    (the newest name its bytes went by), ``[file]`` when unknown. For display only: keys and the wire keep markers."""
    if "[[file:" not in text:
        return text
    return MARKER.sub(lambda m: f"[file: {f[0].name}]" if (f := known_files(m.group(1))) else "[file]", text)


def has_markers(text: str) -> bool:
    return "[[file:" in text and MARKER.search(text) is not None


def marker_digests(text: str) -> list[str]:
    return MARKER.findall(text)


def known_files(digest: str) -> list[File]:
    """The files seen in this process with the bytes ``digest`` names, newest first (those still alive)."""
    with _known_lock:
        entries = list(_known.get(digest, ()))
    return [file for file in map(_live, entries) if file is not None]


def known_file(digest: str) -> File:
    """The file a marker names in this process (the newest seen); ``FileInputError`` when no prompt of this process
    put it there."""
    files = known_files(digest)
    if not files:
        raise FileInputError(
            f"[[file:{digest}]]: this prompt names a file no batch of this process read; build the prompt from "
            "the file column again."
        )
    return files[0]


def reread(digest: str) -> ReadFile:
    """The file a marker names, read again: each file seen with its bytes (newest first) until one still has them
    (a file moved, or overwritten at its first path, is found under the path it was last given); ``FileInputError``
    naming the newest when none has."""
    first: FileInputError | None = None
    for file in known_files(digest) or [known_file(digest)]:
        try:
            read = read_file(file)
        except FileInputError as exc:
            first = first or exc
            continue
        if read.digest == digest:
            return read
        first = first or FileInputError(f"{read.name}: the file changed while the batch ran; run the batch again.")
    assert first is not None
    raise first
