"""What a stored person-level (longitudinal) result says it suppressed, read in one place
for the report, the pages and the API.

Results stored since events are counted once (``COUNTED_ONCE``) hold in
``events_of_suppressed_persons`` only a removed person's *other* events (an event
suppressed first is counted once, in ``events``), so their sum is the events removed; a
release summary says so by ``persons_every_event_suppressed`` (persons among those
suppressed whom event suppression left no event) and, like the search's nodes, by
``"counting": COUNTED_ONCE``. Results stored before (``LEGACY``) counted every event of a
removed person there, those suppressed first too, and a release summary's
``persons_without_events_left`` were kept persons left without a row: their figures are
shown with the words they were stored with, and never summed as if counted once (the
events a legacy release removed are its events in minus its events out, both measured)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from django.contrib.humanize.templatetags.humanize import intcomma

#: Marker stored with a person-level search node and a release's ``suppressed`` summary.
Counting = Literal["events_counted_once", "legacy"]
COUNTED_ONCE: Counting = "events_counted_once"
LEGACY: Counting = "legacy"

LEGACY_NOTE = (
    "Stored before each removed event was counted once: the events of the persons "
    "suppressed include those already counted as suppressed to protect their person."
)


def _plural(n: int, word: str) -> str:
    """``n`` as the pages print it (``intcomma``) and the word, plural unless 1."""
    return f"{intcomma(n)} {word}{'' if n == 1 else 's'}"


def counting_of(stored: Mapping[str, Any]) -> Counting:
    """How a stored node or ``suppressed`` summary counted the events of removed persons."""
    if stored.get("counting") == COUNTED_ONCE or "persons_every_event_suppressed" in stored:
        return COUNTED_ONCE
    return LEGACY


@dataclass(frozen=True)
class PersonSuppression:
    """A stored person-level suppression, with the words that go with its counting."""

    counting: Counting
    persons: int
    events: int  # suppressed to protect their person (the event budget)
    events_of_suppressed_persons: int  # COUNTED_ONCE: their other events; LEGACY: all
    # COUNTED_ONCE: among ``persons``, left no event by event suppression
    persons_every_event_suppressed: int | None
    # LEGACY: kept persons left without a row by event suppression
    persons_without_events_left: int | None
    # events (rows) removed by either reason, each once; None: not known (a legacy node)
    events_removed: int | None
    # a legacy node's stored sum, which may count an event twice (an upper bound)
    events_removed_at_most: int | None
    persons_text: str  # "with their N event(s) …" after the persons suppressed whole
    emptied_text: str  # the persons left without any event, or ""
    note: str  # LEGACY_NOTE for a legacy result, else ""

    @property
    def legacy(self) -> bool:
        return self.counting == LEGACY

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _view(
    stored: Mapping[str, Any],
    *,
    persons_key: str,
    events_key: str,
    removed: int | None,
    removed_at_most: int | None,
) -> PersonSuppression:
    counting = counting_of(stored)
    persons = int(stored.get(persons_key) or 0)
    events = int(stored.get(events_key) or 0)
    others = int(stored.get("events_of_suppressed_persons") or 0)
    if counting == COUNTED_ONCE:
        emptied = int(stored.get("persons_every_event_suppressed") or 0)
        return PersonSuppression(
            counting=counting,
            persons=persons,
            events=events,
            events_of_suppressed_persons=others,
            persons_every_event_suppressed=emptied,
            persons_without_events_left=None,
            events_removed=events + others,
            events_removed_at_most=None,
            persons_text=f"with their {_plural(others, 'event')} not counted above.",
            emptied_text=(
                f"{intcomma(emptied)} of them lost every event to event suppression: a person "
                "with no row left is not released."
                if emptied
                else ""
            ),
            note="",
        )
    left = int(stored.get("persons_without_events_left") or 0)
    return PersonSuppression(
        counting=counting,
        persons=persons,
        events=events,
        events_of_suppressed_persons=others,
        persons_every_event_suppressed=None,
        persons_without_events_left=left if "persons_without_events_left" in stored else None,
        events_removed=removed,
        events_removed_at_most=removed_at_most,
        persons_text=f"with their {_plural(others, 'event')}.",
        emptied_text=(
            f"{_plural(left, 'person')} lost every event and so have no row in the release."
            if left
            else ""
        ),
        note=LEGACY_NOTE,
    )


def release_suppression(applied: Mapping[str, Any] | None) -> PersonSuppression | None:
    """The suppression of a stored person-level release (an apply result, or its
    ``longitudinal`` summary); None for a record-level one."""
    if not applied:
        return None
    lg = applied.get("longitudinal", applied)
    suppressed = lg.get("suppressed") if isinstance(lg, Mapping) else None
    if not isinstance(suppressed, Mapping) or "persons" not in suppressed:
        return None
    measured = None
    if lg.get("events_in") is not None and lg.get("events_out") is not None:
        measured = int(lg["events_in"]) - int(lg["events_out"])
    return _view(
        suppressed,
        persons_key="persons",
        events_key="events",
        removed=measured,
        removed_at_most=None,
    )


def node_suppression(node: Mapping[str, Any] | None) -> PersonSuppression | None:
    """The suppression of a stored person-level search node (the solution or an
    alternative); None for a record-level node."""
    if not node or "suppressed_persons" not in node:
        return None
    stored = node.get("suppressed_rows")
    return _view(
        node,
        persons_key="suppressed_persons",
        events_key="suppressed_events",
        removed=None,
        removed_at_most=int(stored) if stored is not None else None,
    )


def rows_suppressed(applied: Mapping[str, Any] | None) -> int | None:
    """The records (record level) or events (person level) a stored release removed,
    each once: a legacy person-level release's stored ``suppressed_rows`` may count an
    event twice, so its events in minus out are given instead."""
    if not applied:
        return None
    view = release_suppression(applied)
    if view is not None and view.legacy and view.events_removed is not None:
        return view.events_removed
    value = applied.get("suppressed_rows")
    return int(value) if value is not None else None


def rows_suppressed_share(applied: Mapping[str, Any] | None) -> float | None:
    """``suppressed_share`` of a stored release, from ``rows_suppressed``."""
    if not applied:
        return None
    view = release_suppression(applied)
    if view is not None and view.legacy and view.events_removed is not None:
        events_in = int(applied.get("longitudinal", applied)["events_in"])
        return view.events_removed / events_in if events_in else 0.0
    value = applied.get("suppressed_share")
    return float(value) if value is not None else None


def release_suppression_data(applied: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``release_suppression`` as the API serves it."""
    view = release_suppression(applied)
    return view.to_dict() if view is not None else None


def node_suppression_data(node: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``node_suppression`` as the API serves it."""
    view = node_suppression(node)
    return view.to_dict() if view is not None else None
