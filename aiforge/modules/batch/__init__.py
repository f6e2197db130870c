"""Batches at scale: the result types, the run loop (resume, checkpoint, budget) and the dry-run estimate."""
