"""``agg``: rows of any length reduced to one answer per group under the context window, by idea: ``chunks`` (the
instruction, the chunk prompts, the packing of rows under the window), ``reduce`` (the tree of requests, level by
level, resumable), ``report`` (``AggReport``: what a call did) and ``frames`` (pandas data, a Series or a groupby
to groups of row texts and the answers back)."""
