"""pandas integration: the ``df.aiforge`` / ``s.aiforge`` accessor (``accessor.py``) over ``run_batch``.

Nothing is imported here, so ``import aiforge`` can load ``hook.py`` (which registers the accessor once
pandas is imported) without importing pandas or pydantic.
"""
