"""The one model request of a turn, below ``chat/``: the call (``call``), its answer validated with retries and a
tool-less batch item answered whole (``answer``), the response cache at turn level (``cache``), a label row scored
instead of generated (``scored``).

``chat/``'s LangGraph ``route`` node makes its model call here; a batch row of an agent without tools runs here
from the worker pool to the provider, with no call back up into ``chat/``.
"""
