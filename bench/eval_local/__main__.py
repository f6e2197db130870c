"""``python -m bench.eval_local``: print the table of the embedded model's old and new defaults."""

from __future__ import annotations

import argparse

parser = argparse.ArgumentParser(prog="python -m bench.eval_local", description=__doc__)
parser.add_argument("--quick", action="store_true", help="two items per category")
parser.add_argument("--gate", action="store_true", help="only the tool gate, without the model (instant)")
parser.add_argument("--configs", default=None, help="comma-separated configurations (default: all)")
parser.add_argument("--only", default=None, help="comma-separated categories (default: all), e.g. tool,no_tool")
args = parser.parse_args()
if args.gate:
    from bench.eval_local.gate import report, score_gate

    print(report(score_gate()))
else:
    from bench.eval_local.runner import CONFIGS, evaluate, table

    names = [name.strip() for name in (args.configs or ",".join(CONFIGS)).split(",") if name.strip()]
    only = {c.strip() for c in args.only.split(",")} if args.only else None
    print(table({name: evaluate(name, quick=args.quick, only=only) for name in names}))
