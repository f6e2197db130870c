"""``run_batch(cascade=...)``: a cheap model keeps the label rows it is confident on, a strong one answers the rest.

``spec`` is what is asked for (``Cascade``), ``scoring`` the cheap pass, ``threshold`` the statistics that fix the
confidence threshold, ``run`` the strategy the batch pipeline (``orchestrator``) hands the lead rows to, and
``report`` what it did (``CascadeReport``, on the result as ``cascade``).
"""

from aiforge.batch.cascade.report import CascadeReport
from aiforge.batch.cascade.spec import Cascade

__all__ = ["Cascade", "CascadeReport"]
