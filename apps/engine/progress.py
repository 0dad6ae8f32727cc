"""Progress reporting and cancellation of a long search (ARX's ``ARXListener``).

The search calls a *listener* with a :class:`SearchProgress` after each evaluated node
and checks a *cancel* signal between nodes (the compiled search,
``search/compiled_search.py``: between slices of a few milliseconds, and once at the end).
The service layer throttles what it writes to the job row (about once a second); the
engine stays free of any storage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from apps.engine.errors import EngineError


@dataclass(frozen=True)
class SearchProgress:
    """State of a running search."""

    nodes_evaluated: int
    nodes_total: int
    best_levels: tuple[int, ...] | None  # best passing node so far
    best_loss: float | None
    seconds: float

    @property
    def fraction(self) -> float:
        """Share of the lattice evaluated, 0..1 (the search usually stops far earlier)."""
        return self.nodes_evaluated / self.nodes_total if self.nodes_total else 1.0


ProgressListener = Callable[[SearchProgress], None]
CancelSignal = Callable[[], bool] | threading.Event


class SearchCancelled(EngineError):
    """The search was cancelled by its caller."""


def is_cancelled(signal: CancelSignal | None) -> bool:
    """True when ``signal`` (an Event or a callable) asks to stop."""
    if signal is None:
        return False
    if isinstance(signal, threading.Event):
        return signal.is_set()
    return bool(signal())
