"""The name and ``NAME=VALUE`` options of the command line, read one way by every command
(`search`, `apply`, `measure`, with or without ``--person``): comma lists of column names
(``--quasi a,b``), ``COL=VALUE`` pairs (``--hierarchy age=age.csv``) and levels
(``--levels age=2``). Names and values are stripped of the spaces around them; a blank
name, a pair without ``=`` or value, a column given twice in one option or a level that is
no integer is refused with a one-line ``EngineInputError`` naming the option and the item."""

from __future__ import annotations

from collections.abc import Sequence

from apps.engine.errors import EngineInputError


def names(groups: Sequence[str] | None, option: str) -> list[str]:
    """The names of a repeatable comma-list option, in order (``["a,b", "c"]``: a, b, c);
    an empty name (``"a,,b"``, ``" "``, a trailing comma) is refused."""
    out: list[str] = []
    for group in groups or []:
        for part in group.split(","):
            name = part.strip()
            if not name:
                raise EngineInputError(f"{option}: blank name in {group!r}")
            out.append(name)
    return out


def pairs(groups: Sequence[str] | None, option: str) -> dict[str, str]:
    """``COL=VALUE`` items of a repeatable comma-list option, by column."""
    out: dict[str, str] = {}
    for item in names(groups, option):
        name, sep, value = (p.strip() for p in item.partition("="))
        if not sep or not value:
            raise EngineInputError(f"{option} expects COL=VALUE, got {item!r}")
        if not name:
            raise EngineInputError(f"{option}: blank column name in {item!r}")
        if name in out:
            raise EngineInputError(f"{option}: {name!r} given twice")
        out[name] = value
    return out


def levels_option(groups: Sequence[str] | None, option: str) -> dict[str, int]:
    """``COL=L`` items (generalization levels), by column."""
    out = {}
    for name, value in pairs(groups, option).items():
        try:
            out[name] = int(value)
        except ValueError:
            raise EngineInputError(
                f"{option}: level of {name!r} must be an integer, got {value!r}"
            ) from None
    return out
