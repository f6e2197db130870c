"""``python -m bench.eval_local``: print the table of the embedded model's old and new defaults."""

from __future__ import annotations

import argparse

from bench.eval_local.runner import CONFIGS, evaluate, table

parser = argparse.ArgumentParser(prog="python -m bench.eval_local", description=__doc__)
parser.add_argument("--quick", action="store_true", help="two items per category")
parser.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, of: {'; '.join(CONFIGS)}")
args = parser.parse_args()
names = [name.strip() for name in args.configs.split(",") if name.strip()]
print(table({name: evaluate(name, quick=args.quick) for name in names}))
