"""Step 7 techniques beyond global recoding (issue #18; PDPC 2018 §3; seed 004).

One module per technique, each a documented function on a polars DataFrame with a
frozen parameter dataclass and a frozen result: local (cell) suppression,
microaggregation, noise, rounding and top/bottom coding, date shifting, PRAM, rank
swapping, table aggregation with cell suppression, and synthetic data.  `measure.py`
recomputes the risk of an output under the technique's rule and its utility per variable;
`registry.py` is the wizard's one entry point (apply or preview any of them, measured).
"""
