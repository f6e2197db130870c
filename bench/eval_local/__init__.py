"""A mini-eval of the embedded model's defaults: ``python -m bench.eval_local [--quick]``.

Runs the labelled set (``items.py``) through ``ChatAgent`` on whatever GGUF is configured
(``LOCAL_MODEL_PATH`` or the bundled SmolLM2), once with the old defaults (temperature 0.7,
llama.cpp's own samplers, no loop guard) and once with the new ones (``providers/local/defaults.py``),
and reports accuracy per category, loop rate, truncation rate, tool precision and recall and
seconds per item.
"""

from bench.eval_local.runner import evaluate, run

__all__ = ["evaluate", "run"]
