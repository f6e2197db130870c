"""Running many items through an agent: ``run_items`` (``orchestrator``) driven by a frozen ``BatchOptions``.

``ChatAgent.run_batch`` hands itself (a ``BatchOwner``) and its options to the orchestrator; ``runner`` keeps
the workers, resumption, checkpoint and budget rules, ``identity`` what a batch is and has already done,
``results`` the ``BatchResult``, ``estimate`` the dry-run price, ``dedup`` which rows repeat another's prompt (asked
once), ``packing`` several rows per request (``pack=k``), ``savings`` what a batch did not spend
(``BatchResult.saved``), ``cascade`` a cheap model's confident rows kept at a calibrated threshold, ``plans``
and ``plan_table`` the ways to run a batch an estimate compares, ``planner`` the cheapest of them meeting a
deadline. The providers' Batch API jobs (sent whole, answered within a day) are the ``batch_api`` sub-package.
"""
