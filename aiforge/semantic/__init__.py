"""Semantic operators beyond map: ``agg`` (a column of any length reduced under the context window), ``embed``,
``dedup``/``cluster``, ``join`` and ``topk``. Each is plain functions over pandas data and a ``ChatAgent``; the
``df.aiforge`` / ``ddf.aiforge`` accessors in ``dataframes/`` are their public surface."""
