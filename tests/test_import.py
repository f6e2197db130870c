"""`import aiforge` stays light: no provider SDK, LangGraph, pandas or ipywidgets."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("openai", "anthropic", "langgraph", "langchain_core", "pandas", "ipywidgets", "xllamacpp", "httpx")


def imported_after(code: str) -> set[str]:
    probe = f"import sys; {code}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return {name.split(".")[0] for name in out.split()}


def test_import_aiforge_loads_no_heavy_dependency() -> None:
    assert not imported_after("import aiforge") & set(HEAVY)


def test_load_ext_loads_no_heavy_dependency() -> None:
    loaded = imported_after(
        "from IPython.core.interactiveshell import InteractiveShell; "
        "InteractiveShell.instance().run_line_magic('load_ext', 'aiforge')"
    )
    assert not loaded & set(HEAVY)


def test_public_names_resolve_lazily() -> None:
    import aiforge

    assert aiforge.ChatAgent.__name__ == "ChatAgent"
    assert {"ChatAgent", "ChatResponse", "ToolCallRecord", "ChatPanel", "register_provider"} <= set(dir(aiforge))
