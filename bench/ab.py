"""A/B: the same benchmark on an older revision of ``aiforge/`` and on this tree, alternately, in one run.

python -m bench.ab                           # main's aiforge/ vs this tree: tools, plain, throughput
python -m bench.ab --base e03d0c1 --new HEAD --only tools --rounds 8

The base revision's ``aiforge/`` is exported (``git archive``) into a temporary folder, and so is ``--new``'s
(without it, this work tree's ``aiforge/`` as it is: leave it unedited during the run); everything else (the
bench code, the fake server, the peers) is this tree's, so only aiforge differs. Each round runs one child
process per group and tree, the tree that goes first swapping every round, so the drift of a shared machine
lands on both alike. A child measures aiforge beside its peers in the same minute (``bench.common.interleave``)
and prints its figures as JSON; what is reported is each figure's median over rounds, per tree, and new / old.
Ratios against a peer measured in the same child are what to compare: absolute times move with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/ab.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT  # noqa: E402

MARK = "AB-RESULT "


# --- what a child measures -------------------------------------------------------------------------------------------


def _three(group: str, url: str) -> list[Any]:
    """The raw SDK, LangGraph's prebuilt agent and aiforge doing ``group``'s turn, as that group times them."""
    from bench import peers, plain, tools
    from bench.common import PROMPT, Contender

    if group == "tools":
        check = tools._one_tool_call_then_answer
        agent = peers.aiforge_agent(url, tools=True)
        return [
            Contender("raw openai", tools.counted(peers.raw_openai_tool_turn(url)), check=check),
            Contender("langgraph prebuilt", tools.counted(peers.langgraph_prebuilt_turn(url, tools=True)), check=check),
            Contender("aiforge", tools.counted(lambda: agent.chat(PROMPT).message), before=agent.reset, check=check),
        ]
    check = plain._answer_is_echo
    agent = peers.aiforge_agent(url)
    return [
        Contender("raw openai", peers.raw_openai_turn(url), check=check),
        Contender("langgraph prebuilt", peers.langgraph_prebuilt_turn(url), check=check),
        Contender("aiforge", lambda: agent.chat(PROMPT).message, before=agent.reset, check=check),
    ]


def _overheads(group: str, quick: bool) -> dict[str, float]:
    """aiforge's and LangGraph prebuilt's overhead over the raw SDK (ms, wall and CPU), and their ratio."""
    from bench.common import ServerProcess, interleave
    from bench.peers import close_loops

    with ServerProcess() as server:
        t = interleave(_three(group, server.openai_base_url), rounds=3 if quick else 6, calls=8 if quick else 12)
    close_loops()
    if t.errors:
        raise RuntimeError(f"{group}: {t.errors}")
    ours, theirs = t.diff("aiforge", "raw openai").median, t.diff("langgraph prebuilt", "raw openai").median
    cpu_ours = t.diff("aiforge:cpu", "raw openai:cpu").median
    cpu_theirs = t.diff("langgraph prebuilt:cpu", "raw openai:cpu").median
    return {
        "aiforge overhead ms": ours * 1e3,
        "prebuilt overhead ms": theirs * 1e3,
        "ratio to prebuilt": ours / theirs,
        "cpu ratio to prebuilt": cpu_ours / cpu_theirs,
        "raw sdk turn ms": t.stat("raw openai").median * 1e3,
    }


def _throughput(quick: bool) -> dict[str, float]:
    """``run_batch`` wall time over raw ``AsyncOpenAI`` + semaphore per cell, and CPU ms per item."""
    from bench import throughput
    from bench.common import ServerProcess
    from bench.peers import close_loops

    inputs = throughput._items(200 if quick else throughput.ITEMS)
    out: dict[str, float] = {}
    for latency in (0.0, 0.1):
        with ServerProcess(latency=latency) as server:
            for concurrency in (20, 100):
                contenders = {
                    "raw": throughput._raw(server.openai_base_url, concurrency),
                    "aiforge": throughput._aiforge(server.openai_base_url, concurrency),
                }
                for run_once in contenders.values():
                    run_once(inputs[:50])
                wall, cpu = throughput._walls(contenders, inputs, 1)
                cell = f"c{concurrency} {latency * 1e3:.0f}ms"
                out[f"{cell} wall / raw"] = wall["aiforge"] / wall["raw"]
                out[f"{cell} aiforge cpu ms/item"] = cpu["aiforge"] / len(inputs) * 1e3
    close_loops()
    return out


CHILDREN: dict[str, Callable[[bool], dict[str, float]]] = {
    "tools": lambda quick: _overheads("tools", quick),
    "plain": lambda quick: _overheads("plain", quick),
    "throughput": _throughput,
}


def child(group: str, quick: bool) -> None:
    import aiforge

    figures = CHILDREN[group](quick)
    print(MARK + json.dumps({"aiforge": aiforge.__file__, "figures": figures}), flush=True)


# --- the parent: trees, rounds, the table ----------------------------------------------------------------------------


def export(revision: str, into: Path) -> Path:
    """``revision``'s ``aiforge/`` in ``into`` (a folder to put first on ``PYTHONPATH``)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "aiforge"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_child(tree: Path, group: str, quick: bool) -> dict[str, float]:
    """One child process measuring ``group`` with ``tree``'s aiforge (its cwd, first on the path)."""
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tree), str(ROOT), *inherited]), "TQDM_DISABLE": "1"}
    argv = [sys.executable, "-m", "bench.ab", "--child", group, *(["--quick"] if quick else [])]
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=1800, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{group} in {tree} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    result = json.loads(lines[-1].removeprefix(MARK))
    expected = (tree / "aiforge" / "__init__.py").resolve()
    if Path(result["aiforge"]).resolve() != expected:
        raise RuntimeError(f"the child imported {result['aiforge']}, not {expected}")
    return dict(result["figures"])


def table(samples: dict[str, dict[str, list[dict[str, float]]]], base: str, new: str) -> str:
    lines = [
        f"| group | figure | old ({base}) | new ({new}) | new / old |",
        "|---|---|---|---|---|",
    ]
    for group, trees in samples.items():
        for figure in trees["new"][0] if trees["new"] else []:
            old = statistics.median(s[figure] for s in trees["old"])
            new = statistics.median(s[figure] for s in trees["new"])
            lines.append(f"| {group} | {figure} | {old:.3f} | {new:.3f} | {new / old:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="main", help="the old revision (default: main)")
    parser.add_argument("--new", default=None, help="the new revision (default: this work tree, as it is)")
    parser.add_argument("--only", default="tools,plain,throughput", help=f"groups: {', '.join(CHILDREN)}")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; each runs every group on both trees")
    parser.add_argument("--quick", action="store_true", help="shorter children (a smoke run)")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.quick)
        return 0
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = sorted(set(groups) - set(CHILDREN))
    if unknown:
        parser.error(f"unknown group(s) {', '.join(unknown)}; choose from {', '.join(CHILDREN)}")
    samples: dict[str, dict[str, list[dict[str, float]]]] = {g: {"old": [], "new": []} for g in groups}
    with tempfile.TemporaryDirectory(prefix="aiforge-ab-") as folder:
        new = ROOT if args.new is None else export(args.new, Path(folder) / "new")
        trees = {"old": export(args.base, Path(folder) / "old"), "new": new}
        for r in range(args.rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for group in groups:
                for name in order:
                    figures = run_child(trees[name], group, args.quick)
                    samples[group][name].append(figures)
                    shown = ", ".join(f"{k} {v:.3f}" for k, v in figures.items())
                    print(f"round {r + 1}/{args.rounds} {group} {name}: {shown}", flush=True)
    load = os.getloadavg()
    print(f"\n{args.rounds} rounds, medians; load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    print(table(samples, args.base, args.new or "this tree"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
