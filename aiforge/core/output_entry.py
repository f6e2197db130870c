"""What an ``output=`` argument may be: the checks behind ``OutputSpec.of`` and their one-line messages.

Pydantic reads a string as a forward reference (``"int"`` resolves, ``"Review"`` fails later), builds no schema
for a value (``3``, ``Review(...)``) and reports an unresolved annotation with advice about its own
``model_config``: each becomes a ``UsageError`` saying what to pass instead.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, PydanticUndefinedAnnotation

from aiforge.core.errors import UsageError

_Spec = TypeVar("_Spec")
_KINDS = "a pydantic model class, list[str], Literal[...], a TypedDict, a dataclass..."


def checked_spec(output: Any, build: Callable[[Any], _Spec]) -> _Spec:
    """``build(output)``, or a ``UsageError`` naming why ``output`` is not a type an answer can be validated as."""
    if isinstance(output, str):
        raise UsageError(f"output must be a type ({_KINDS}), got the str {output!r}")
    if _is_instance_of_a_schema_type(output):
        name = type(output).__name__
        raise UsageError(f"output= got an instance of {name}: pass the class {name}, not an instance (output={name})")
    if type(output).__module__ == "builtins" and not isinstance(output, type):  # 3, {"a": 1}, [str]
        raise UsageError(f"output must be a type ({_KINDS}), got {_described(output)}")
    try:
        return build(output)
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - pydantic raises several kinds for a type it cannot handle
        raise UsageError(_why_not(output, exc)) from None


def _is_instance_of_a_schema_type(output: Any) -> bool:
    if isinstance(output, type):
        return False
    return isinstance(output, BaseModel | enum.Enum) or dataclasses.is_dataclass(output)


def _why_not(output: Any, exc: Exception) -> str:
    undefined = _undefined_annotation(output)
    if undefined is not None:
        name = output.__name__
        return (
            f"output={name}: the annotation {undefined!r} is not defined; define or import it, then call "
            f"{name}.model_rebuild()"
        )
    return f"output must be a type pydantic can validate ({_KINDS}), got {_described(output)}: {_first_sentence(exc)}"


def _undefined_annotation(output: Any) -> str | None:
    """The name a model's forward reference points at that does not exist, or None."""
    if not (isinstance(output, type) and issubclass(output, BaseModel)):
        return None
    try:
        output.model_rebuild(raise_errors=True)
    except PydanticUndefinedAnnotation as exc:
        return exc.name
    except Exception:  # noqa: BLE001 - another problem: the generic message names it
        return None
    return None


def _first_sentence(exc: Exception) -> str:
    # pydantic goes on with advice for its own model_config, which does not apply to output=
    return re.split(r"(?<=\.)\s", str(exc).strip(), maxsplit=1)[0]


def _described(output: Any) -> str:
    if isinstance(output, type):
        return f"the class {output.__qualname__}, which pydantic cannot validate"
    return f"a {type(output).__name__} value ({output!r:.60})"
