"""Privacy models on a sensitive attribute: l-diversity and t-closeness, as ARX defines them.

Each model judges one equivalence class from the distribution of the sensitive values
in it (and, for t-closeness, the distribution over the whole input). A class that fails
any model, or is smaller than the release size, is record-suppressed; the node passes
when the suppressed rows are within the limit (ARX ``HashGroupify``: a class is an
outlier when it fails the minimal class size or any class-based criterion).

Monotonicity, as ARX declares it (``isMonotonicWithSuppression`` /
``isMonotonicWithGeneralization``) and as the search uses it:

* distinct l-diversity is monotone with suppression: a released class has at least
  ``l`` distinct values and at least ``k`` rows, and so has every class it merges into,
  so suppressed rows never increase along generalization;
* entropy and recursive-(c, l) l-diversity and every t-closeness are monotone with
  generalization only (a merge of passing classes passes), not with suppression: a
  released class can merge with a suppressed one into a class that fails. With a
  suppression limit the search then tags nodes only on the rows of classes smaller
  than the release size (ARX's "partial" monotonicity, its k-anonymity property).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from apps.engine.errors import EngineInputError

ModelKind = Literal[
    "distinct-l", "entropy-l", "recursive-cl", "equal-t", "hierarchical-t", "ordered-t"
]
#: Every specification keyword, in the order the command line lists them.
MODEL_KINDS: tuple[ModelKind, ...] = (
    "distinct-l",
    "entropy-l",
    "recursive-cl",
    "equal-t",
    "hierarchical-t",
    "ordered-t",
)
#: Kernel codes (``sensitive/kernels.py``), one per kind.
KIND_CODES: dict[ModelKind, int] = {kind: i for i, kind in enumerate(MODEL_KINDS)}


@dataclass(frozen=True)
class SensitiveModel:
    """One privacy model on the sensitive column ``column``.

    ``kind`` is a :data:`MODEL_KINDS` keyword; ``l`` (l-diversity), ``c`` (recursive
    (c, l)) and ``t`` (t-closeness) are its parameters. Build it with :func:`parse_model`
    or the ``*_model`` helpers below, which check the parameters.
    """

    column: str
    kind: ModelKind
    l: float = 0.0  # noqa: E741 (the parameter's name in the literature)
    c: float = 0.0
    t: float = 0.0

    @property
    def monotone_with_suppression(self) -> bool:
        """ARX: only distinct l-diversity (module docstring)."""
        return self.kind == "distinct-l"

    @property
    def min_class_size(self) -> int:
        """Smallest class that can pass: ``ceil(l)`` for l-diversity (ARX
        ``LDiversity.getMinimalClassSize``), 1 for t-closeness."""
        return math.ceil(self.l) if self.kind.endswith("-l") or self.kind == "recursive-cl" else 1

    @property
    def needs_hierarchy(self) -> bool:
        return self.kind == "hierarchical-t"

    @property
    def needs_numbers(self) -> bool:
        return self.kind == "ordered-t"

    def spec(self) -> str:
        """The specification this model was parsed from (``distinct-l=2``...)."""
        if self.kind == "recursive-cl":
            return f"recursive-cl={self.c:g},{self.l:g}"
        if self.kind.endswith("-t"):
            return f"{self.kind}={self.t:g}"
        return f"{self.kind}={self.l:g}"

    def describe(self) -> str:
        """The model in the method's words."""
        name = {
            "distinct-l": f"distinct l-diversity, l = {self.l:g}",
            "entropy-l": f"entropy l-diversity, l = {self.l:g}",
            "recursive-cl": f"recursive (c, l)-diversity, c = {self.c:g}, l = {self.l:g}",
            "equal-t": f"t-closeness (equal distance), t = {self.t:g}",
            "hierarchical-t": f"t-closeness (hierarchical distance), t = {self.t:g}",
            "ordered-t": f"t-closeness (ordered distance), t = {self.t:g}",
        }[self.kind]
        return f"{name} on {self.column}"


def _number(text: str, what: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise EngineInputError(
            f"criterion {spec!r}: {what} must be a number, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise EngineInputError(f"criterion {spec!r}: {what} must be finite, got {text!r}")
    return value


def _whole(value: float, what: str, spec: str) -> float:
    if value != int(value) or value < 1:
        raise EngineInputError(f"criterion {spec!r}: {what} must be a whole number >= 1")
    return value


def parse_model(column: str, spec: str) -> SensitiveModel:
    """A model from its specification: ``distinct-l=L``, ``entropy-l=L`` (Shannon),
    ``recursive-cl=C,L``, ``equal-t=T``, ``hierarchical-t=T`` or ``ordered-t=T``.

    ``l`` is a whole number for distinct and recursive l-diversity (ARX takes an int),
    any number >= 1 for entropy; ``c > 0``; ``0 <= t <= 1``.
    """
    kind, sep, params = spec.strip().partition("=")
    kind = kind.strip()
    if kind not in MODEL_KINDS or not sep:
        raise EngineInputError(
            f"criterion {spec!r} not understood: use one of "
            "distinct-l=L, entropy-l=L, recursive-cl=C,L, equal-t=T, hierarchical-t=T, "
            "ordered-t=T"
        )
    parts = [p.strip() for p in params.split(",")]
    if kind == "recursive-cl":
        if len(parts) != 2:
            raise EngineInputError(f"criterion {spec!r}: recursive-cl needs C,L (e.g. 3,2)")
        c = _number(parts[0], "c", spec)
        if c <= 0:
            raise EngineInputError(f"criterion {spec!r}: c must be > 0")
        l_value = _whole(_number(parts[1], "l", spec), "l", spec)
        return SensitiveModel(column, "recursive-cl", l=l_value, c=c)
    if len(parts) != 1:
        raise EngineInputError(f"criterion {spec!r}: {kind} takes one number")
    value = _number(parts[0], "t" if kind.endswith("-t") else "l", spec)
    if kind.endswith("-t"):
        if not 0.0 <= value <= 1.0:
            raise EngineInputError(f"criterion {spec!r}: t must be in [0, 1]")
        return SensitiveModel(column, kind, t=value)
    if kind == "distinct-l":
        value = _whole(value, "l", spec)
    elif value < 1:
        raise EngineInputError(f"criterion {spec!r}: l must be >= 1")
    return SensitiveModel(column, kind, l=value)
