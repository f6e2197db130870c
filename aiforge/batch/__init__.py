"""Running many items through an agent: ``run_items`` (``orchestrator``) driven by a frozen ``BatchOptions``.

``ChatAgent.run_batch`` hands itself (a ``BatchOwner``) and its options to the orchestrator; ``runner`` keeps
the workers, resumption, checkpoint and budget rules, ``identity`` what a batch is and has already done,
``results`` the ``BatchResult``, ``estimate`` the dry-run price, ``packing`` several rows per request
(``pack=k``). The providers' Batch API jobs (sent whole, answered within a day) are the ``batch_api`` sub-package.
"""
