"""What polars' streaming engine would hand back to its in-memory engine in a query.

Such a node ("in-memory engine fallback" in the physical plan's legend) takes its whole
input at once: on 100 million rows, the whole frame. Tests of the bounded-memory paths
assert that their queries have none.
"""

from __future__ import annotations

import polars as pl

# The physical plan as Graphviz text marks fallback nodes with this fill colour.
_FALLBACK = 'fillcolor="0.0 0.3 1.0"'


def in_memory_fallbacks(frame: pl.LazyFrame) -> list[str]:
    """The labels of the nodes of `frame`'s streaming plan that fall back to memory."""
    dot = frame.show_graph(engine="streaming", plan_stage="physical", raw_output=True)
    assert isinstance(dot, str)
    return [
        line.split('label="', 1)[1].split('"', 1)[0]
        for line in dot.splitlines()
        if _FALLBACK in line and 'label="' in line
    ]
