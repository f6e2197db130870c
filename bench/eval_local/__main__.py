"""``python -m bench.eval_local``: print the old-vs-new table of the embedded model's defaults."""

from __future__ import annotations

import argparse

from bench.eval_local.runner import evaluate, table

parser = argparse.ArgumentParser(prog="python -m bench.eval_local", description=__doc__)
parser.add_argument("--quick", action="store_true", help="two items per category")
args = parser.parse_args()
print(table({name: evaluate(name, quick=args.quick) for name in ("old", "new")}))
