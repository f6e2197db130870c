"""``aiforge batch``: one prompt template over the rows of a CSV, Parquet or JSONL file.

Built on the DataFrame accessor (``df.aiforge.map`` / ``classify``): the same row templates,
progress bar, per-row failures, response cache and checkpoints as ``run_batch`` in Python. The
result is the input's columns, then the new ones (``response``; ``label`` with ``--labels``; the
schema's fields with ``--schema``), then ``error`` for rows that failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from types import GenericAlias
from typing import TYPE_CHECKING, Any, Literal, TextIO

from aiforge.cli.batch_files import auto_checkpoint, check_target, discard, rescue
from aiforge.core.errors import FailedRowsWarning
from aiforge.core.failed_rows import failed_rows_message
from aiforge.core.setting_flags import option_settings
from aiforge.core.types import AIForgeError

if TYPE_CHECKING:
    from aiforge.core.errors import BatchInterrupted

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                               "object": dict}


class BatchUsageError(ValueError):
    """A mistake in the command line or its files: exit code 2, one line."""


def add_parser(commands: Any) -> None:
    """The ``batch`` subcommand's options."""
    batch = commands.add_parser(
        "batch",
        help="run a prompt template over every row of a CSV, Parquet or JSONL file",
        description="Fill --prompt from each row's columns ({column}), ask the model, write the rows with the answers.",
    )
    batch.add_argument("input", help="a .csv, .parquet or .jsonl file")
    batch.add_argument("--prompt", required=True, help='row template, e.g. "Sentiment of: {review}"')
    batch.add_argument("-o", "--output", help="write .csv, .parquet or .jsonl (default: CSV on stdout)")
    typed = batch.add_mutually_exclusive_group()
    typed.add_argument("--labels", help="comma-separated labels: the answer is one of them (column 'label')")
    typed.add_argument("--schema", metavar="FILE", help="a JSON schema (an object): its fields become columns")
    batch.add_argument("-p", "--provider", help="openai, anthropic, internal_gateway, local, ... (default: auto)")
    batch.add_argument("-m", "--model", help="model name (default: the provider's or the router's choice)")
    batch.add_argument("-t", "--temperature", type=float, help="sampling temperature (0 = deterministic)")
    batch.add_argument("--max-tokens", type=int, help="cap on generated tokens per model call")
    batch.add_argument("-q", "--quality", choices=["high", "medium", "low"], help="route to a model of this tier")
    batch.add_argument("-c", "--concurrency", type=int, default=10, help="rows in flight at once (default 10)")
    batch.add_argument("--checkpoint", metavar="FILE", help="keep finished rows here; a rerun does only the rest")
    batch.add_argument("--restart", action="store_true", help="start the --checkpoint over")
    batch.add_argument("--cache", nargs="?", const=True, metavar="FILE",
                       help="reuse identical answers (the user cache, or this SQLite file)")
    batch.add_argument("--max-cost", type=float, metavar="USD", help="stop before spending more than this")


def run(args: argparse.Namespace, out: TextIO) -> None:
    """Check every flag and the output, read the input, run the batch through the accessor, write the result.

    Nothing is asked before the output's writer and folder are known to work. Without ``--checkpoint`` the
    command checkpoints automatically (``batch_files``), so after Ctrl-C the same command runs only the
    rest; if writing the result fails, the answers are rescued to a JSONL file.
    """
    from aiforge.core.errors import BatchInterrupted

    if args.concurrency < 1:
        raise BatchUsageError("--concurrency must be >= 1")
    target = Path(args.output) if args.output else None
    if target is not None:
        _check_output(target)
    frame = read_table(Path(args.input))
    if frame.empty:
        raise BatchUsageError(f"{args.input} has no rows")
    schema = _load_schema(Path(args.schema)) if args.schema else None
    checkpoint, automatic = _checkpoint(args, schema)
    options: dict[str, Any] = {"concurrency": args.concurrency, **_agent_settings(args)}
    for flag in ("cache", "max_cost"):
        if getattr(args, flag) is not None:
            options[flag] = getattr(args, flag)
    if checkpoint is not None:
        options["checkpoint"] = checkpoint
    # An automatic checkpoint of another batch (the input file changed) is started over, never refused.
    if args.restart or automatic:
        options["restart"] = True
    # Failed rows are in the error column and the closing line, not a warning naming a Python object.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FailedRowsWarning)
            if args.labels is not None:
                labels = [label.strip() for label in args.labels.split(",") if label.strip()]
                new = frame.aiforge.classify(args.prompt, labels, **options).to_frame()
            else:
                output = model_from_schema(schema) if schema is not None else None
                new = frame.aiforge.map(args.prompt, output=output, **options)
    except BatchInterrupted as stop:
        raise BatchInterrupted(_interrupted(stop, checkpoint), finished=stop.finished, total=stop.total) from None
    batch = new.attrs["aiforge"]
    result = frame.join(new.rename(columns={c: f"{c}_answer" for c in new.columns if c in frame.columns}))
    if batch.failed:
        result["error"] = batch.to_dataframe()["error"]
    _write(result, target, out)
    if automatic and checkpoint is not None:
        discard(checkpoint)
    saved = batch.saved
    print(
        f"aiforge: {len(frame) - len(batch.failed)} of {len(frame)} rows answered, ${batch.total_cost:.4f}"
        + (f"; {saved}" if saved.requests else "")
        + (f"; {failed_rows_message(batch.failed, len(frame), where='the error column')}" if batch.failed else ""),
        file=sys.stderr,
    )


class BatchWriteError(AIForgeError):
    """The result could not be written to ``-o``; the message says where the answers were rescued to."""


def _check_output(target: Path) -> None:
    """``BatchUsageError`` unless ``target``'s format has its writer and its folder takes the file."""
    if _format_of(target) == "parquet":
        try:
            _require_pyarrow()
        except BatchUsageError as exc:
            raise BatchUsageError(f"-o {target}: {exc} (or write .csv or .jsonl)") from None
    try:
        check_target(target)
    except OSError as exc:
        raise BatchUsageError(f"-o {target}: {exc}") from None


def _checkpoint(args: argparse.Namespace, schema: dict[str, Any] | None) -> tuple[Path | None, bool]:
    """The checkpoint file and whether it is the automatic one (``--checkpoint`` wins)."""
    if args.checkpoint is not None:
        return Path(args.checkpoint), False
    # Its folder is made by the checkpoint's store when the first row lands: a batch refused before any
    # request (a template naming no column) leaves nothing in the user's data folder.
    path = auto_checkpoint(args, schema)
    return path, path is not None


def _interrupted(stop: BatchInterrupted, checkpoint: Path | None) -> str:
    rest = stop.total - stop.finished
    if checkpoint is None:
        return (
            f"batch interrupted: {stop.finished} of {stop.total} rows finished but are not kept (the STORE setting "
            "is off); pass --checkpoint FILE so that the same command again runs only the unfinished rows."
        )
    return (
        f"batch interrupted: {stop.finished} of {stop.total} rows finished and are kept in {checkpoint}; run the "
        f"same command again to run only the other {rest}."
    )


def _write(result: Any, target: Path | None, out: TextIO) -> None:
    try:
        write_table(result, target, out)
    except (OSError, ValueError, ImportError) as exc:
        if target is None:
            raise
        where = rescue(result, target)
        raise BatchWriteError(
            f"could not write {target} ({type(exc).__name__}: {exc}); the {len(result)} rows with their answers "
            f"are in {where}"
        ) from None


def _agent_settings(args: argparse.Namespace) -> dict[str, Any]:
    chosen = {"provider": args.provider, "quality": args.quality}
    return {**{name: value for name, value in chosen.items() if value is not None}, **option_settings(args)}


def _format_of(path: Path) -> str:
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise BatchUsageError(f"{path}: use a .csv, .parquet or .jsonl file (got {path.suffix or 'no extension'!r})")
    return kind


def _require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise BatchUsageError("Parquet files need pyarrow: pip install pyarrow") from None


def read_table(path: Path) -> Any:
    """The rows of a CSV, Parquet or JSONL file as a DataFrame."""
    import pandas as pd

    kind = _format_of(path)
    if not path.is_file():
        raise BatchUsageError(f"{path}: no such file")
    if kind == "parquet":
        _require_pyarrow()
    try:
        if kind == "csv":
            return pd.read_csv(path)
        if kind == "parquet":
            return pd.read_parquet(path)
        return pd.read_json(path, lines=True)
    except (ValueError, OSError) as exc:
        raise BatchUsageError(f"{path}: cannot read it as {kind}: {exc}") from None


def write_table(frame: Any, path: Path | None, out: TextIO) -> None:
    """``frame`` as CSV on ``out``, or in the format ``path``'s extension names."""
    kind = _format_of(path) if path is not None else "csv"
    if kind == "parquet":
        _require_pyarrow()
        frame.to_parquet(path)
    elif kind == "jsonl":
        text = frame.to_json(orient="records", lines=True, date_format="iso", force_ascii=False)
        if path is None:
            out.write(text)
        else:
            path.write_text(text, encoding="utf-8")
    elif path is None:
        frame.to_csv(out, index=False)
    else:
        frame.to_csv(path, index=False)


def _load_schema(path: Path) -> dict[str, Any]:
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BatchUsageError(f"--schema {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BatchUsageError(f"--schema {path}: not JSON: {exc}") from None
    if not isinstance(schema, dict) or schema.get("type", "object") != "object" or not schema.get("properties"):
        raise BatchUsageError(f"--schema {path}: give an object schema with properties (its fields become columns)")
    return schema


def model_from_schema(schema: dict[str, Any]) -> type:
    """A pydantic model for an object schema: its properties' types (enums as Literal), required or optional."""
    from pydantic import Field, create_model

    required = set(schema.get("required", ()))
    fields: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        kind: Any = _python_type(prop)
        description = prop.get("description") if isinstance(prop, dict) else None
        if name in required:
            fields[name] = (kind, Field(description=description))
        else:
            fields[name] = (kind | None, Field(default=None, description=description))
    title = str(schema.get("title") or "Row")
    model: type = create_model(title if title.isidentifier() else "Row", **fields)
    return model


def _python_type(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return Any
    if prop.get("enum"):
        return Literal[tuple(prop["enum"])]
    if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
        return GenericAlias(list, (_python_type(prop["items"]),))  # list[item type], the item type known at run time
    kind = prop.get("type")
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any
