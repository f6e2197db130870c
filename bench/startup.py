"""Import and start-up, each measured in a fresh ``python -c`` process, many times.

The child times only the statement under test with ``perf_counter`` (interpreter start-up is
not counted) and prints milliseconds. Subjects are run round-robin, so a burst of load on the
machine hits all of them alike.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from bench.common import API_KEY, OPENAI_MODEL, PYTHON, ROOT, Row, ServerProcess, Stat

GROUP = "import & start-up"
IMPORT_LIMIT_MS = 150.0
LOAD_EXT_LIMIT_MS = 250.0

TIMED = """
import time
{setup}
t0 = time.perf_counter()
{statement}
print((time.perf_counter() - t0) * 1e3)
"""

NEW_AGENT = (
    "from aiforge import ChatAgent\n"
    "agent = ChatAgent(provider='openai', OPENAI_API_KEY='$KEY', OPENAI_BASE_URL='$URL', MODEL='$MODEL', "
    "PROGRESS_BAR=False)"
)

# name -> (setup, timed statement); $URL is the fake server's OpenAI base URL
SUBJECTS: dict[str, tuple[str, str]] = {
    "import aiforge": ("", "import aiforge"),
    "%load_ext aiforge": (
        "from IPython.core.interactiveshell import InteractiveShell\nshell = InteractiveShell.instance()",
        "shell.run_line_magic('load_ext', 'aiforge')",
    ),
    "aiforge: import + ChatAgent()": ("", NEW_AGENT),
    "aiforge: import + ChatAgent() + first chat()": ("", NEW_AGENT + "\nagent.chat('hello')"),
    "import openai": ("", "import openai"),
    "import anthropic": ("", "import anthropic"),
    "import langchain_openai": ("", "import langchain_openai"),
    "import langgraph.graph": ("", "import langgraph.graph"),
    "from langgraph.prebuilt import create_react_agent": ("", "from langgraph.prebuilt import create_react_agent"),
    "import pydantic_ai": ("", "import pydantic_ai"),
    "openai: import + OpenAI() + first call": (
        "",
        "import openai\n"
        "client = openai.OpenAI(base_url='$URL', api_key='$KEY', max_retries=0)\n"
        "client.chat.completions.create(model='$MODEL', messages=[{'role': 'user', 'content': 'hello'}])",
    ),
    "LangGraph prebuilt: import + create + first invoke": (
        "import warnings\nwarnings.simplefilter('ignore')",
        "from langchain_openai import ChatOpenAI\n"
        "from langgraph.prebuilt import create_react_agent\n"
        "llm = ChatOpenAI(model='$MODEL', base_url='$URL', api_key='$KEY', max_retries=0)\n"
        "agent = create_react_agent(llm, tools=[])\n"
        "agent.invoke({'messages': [{'role': 'user', 'content': 'hello'}]})",
    ),
    "pydantic-ai: import + Agent + first run_sync": (
        "",
        "from pydantic_ai import Agent\n"
        "from pydantic_ai.models.openai import OpenAIChatModel\n"
        "from pydantic_ai.providers.openai import OpenAIProvider\n"
        "agent = Agent(OpenAIChatModel('$MODEL', provider=OpenAIProvider(base_url='$URL', api_key='$KEY')))\n"
        "agent.run_sync('hello')",
    ),
}


def child_code(name: str, url: str) -> str:
    setup, statement = SUBJECTS[name]
    statement = statement.replace("$URL", url).replace("$KEY", API_KEY).replace("$MODEL", OPENAI_MODEL)
    return TIMED.format(setup=setup, statement=statement)


def child_env() -> dict[str, str]:
    """No provider keys from the caller; bytecode cached (as for any installed package), outside the repo."""
    skip = ("OPENAI_", "ANTHROPIC_", "AIFORGE_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "aiforge-bench-pycache")
    return env


def time_child(code: str, env: dict[str, str]) -> float:
    """Milliseconds the child reports; any failure raises with the child's stderr."""
    done = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    return float(done.stdout.strip().splitlines()[-1])


def run(quick: bool) -> list[Row]:
    ours_repeats, peer_repeats = (3, 2) if quick else (20, 7)
    samples: dict[str, list[float]] = {name: [] for name in SUBJECTS}
    errors: dict[str, str] = {}
    with ServerProcess() as server:
        codes = {name: child_code(name, server.openai_base_url) for name in SUBJECTS}
        env = child_env()
        for name in SUBJECTS:  # untimed: fills the bytecode cache and the OS file cache
            try:
                time_child(codes[name], env)
            except Exception as exc:  # noqa: BLE001
                errors[name] = f"{type(exc).__name__}: {exc}"[:300]
        for r in range(ours_repeats):
            for name in SUBJECTS:
                if name in errors or (r >= peer_repeats and not name.startswith(("import aiforge", "%load_ext"))):
                    continue
                try:
                    samples[name].append(time_child(codes[name], env))
                except Exception as exc:  # noqa: BLE001
                    errors[name] = f"{type(exc).__name__}: {exc}"[:300]
    stats = {name: Stat.of(values) for name, values in samples.items() if values and name not in errors}

    def text(name: str) -> str:
        return stats[name].fmt(digits=1, scale=1) if name in stats else f"error: {errors.get(name, 'n/a')}"

    def target_row(name: str, limit: float, peer: str) -> Row:
        target = f"<= {limit:.0f} ms"
        if name not in stats:
            return Row(GROUP, name, text(name), peer, target=target, passed=False)
        value = stats[name].median
        return Row(GROUP, name, text(name), peer, value / limit, target, value <= limit)

    rows = [
        target_row("import aiforge", IMPORT_LIMIT_MS, f"import openai: {text('import openai')}"),
        target_row("%load_ext aiforge", LOAD_EXT_LIMIT_MS, "(IPython shell already up, as in a kernel)"),
        Row(
            GROUP,
            "aiforge: import + ChatAgent() ready",
            text("aiforge: import + ChatAgent()"),
            f"LangGraph prebuilt import: {text('from langgraph.prebuilt import create_react_agent')}",
        ),
        Row(
            GROUP,
            "first answer from a cold process: aiforge",
            text("aiforge: import + ChatAgent() + first chat()"),
            f"raw openai: {text('openai: import + OpenAI() + first call')}",
        ),
        Row(
            GROUP,
            "first answer from a cold process: LangGraph prebuilt",
            text("LangGraph prebuilt: import + create + first invoke"),
            f"pydantic-ai: {text('pydantic-ai: import + Agent + first run_sync')}",
        ),
    ]
    for name in ("import anthropic", "import langchain_openai", "import langgraph.graph", "import pydantic_ai"):
        rows.append(Row(GROUP, f"peer: {name}", "", text(name)))
    return rows
