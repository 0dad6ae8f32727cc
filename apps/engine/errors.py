"""Errors raised by the engine.

Every message is one readable line: the command line prints it as is and the web
layer shows it to the user, so it must say what is wrong and, where useful, which
values or columns are concerned.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class EngineInputError(EngineError):
    """A bad file, column or argument given to the engine."""


class HierarchyError(EngineError):
    """A hierarchy does not cover the data or is inconsistent."""


def preview(values: list[str], limit: int = 20) -> str:
    """Name the first `limit` values and how many there are in all.

    Used by messages that list offending values: a long list would make the
    message unreadable, a count alone would not let the user find the problem.
    """
    shown = ", ".join(repr(v) for v in values[:limit])
    if len(values) > limit:
        return f"{shown}, … ({len(values)} in all)"
    return f"{shown} ({len(values)} in all)"
