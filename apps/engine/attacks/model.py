"""What an attack test returns: per attack, attack vs control vs naive baseline."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from apps.engine.attacks.stats import Difference, Rate

METHOD = "Article 29 Working Party criteria and record linkage, against a held-back control"
#: Bumped whenever a change can move a figure: reports print it beside the seed.
METHOD_VERSION = "1.0 (2026-05)"
#: Targets drawn for the attack sample, and as many for the control sample.  At 1,000 a
#: rate's 95 % interval is at most ±3.1 points wide (at 50 %), ±1.4 at 5 %.
DEFAULT_TARGETS = 1_000

SINGLING_OUT = "singling_out"
LINKABILITY = "linkability"
INFERENCE = "inference"
EXACT = "exact match"
NEAREST = "nearest match"

QUESTIONS = {
    SINGLING_OUT: (
        "Singling out: does what the intruder knows of a person (their quasi-identifiers) "
        "isolate exactly one released record?"
    ),
    LINKABILITY: (
        "Linkability: holding a person's quasi-identifiers from another source, does the "
        "intruder link them to that person's own released record?"
    ),
    INFERENCE: (
        "Inference: from the released records matching a person's quasi-identifiers, does "
        "the intruder guess the person's sensitive value?"
    ),
}


@dataclass(frozen=True)
class AttackResult:
    criterion: str  # SINGLING_OUT, LINKABILITY or INFERENCE (Opinion 05/2014's three)
    variant: str  # EXACT or NEAREST; for inference the sensitive column
    question: str  # what the attack asks, in plain words
    attacks: int  # attacks made on the attack sample (as many on the control sample)
    attack: Rate  # success on people whose records are in the release
    control: Rate  # success on held-back people, whose records did not shape it
    baseline: Rate  # a naive intruder who knows nothing of the person
    advantage: Difference  # attack − control: what the release gives away about its people


class AttackReportData:
    """What a report of attacks on records and one on persons share: a result by name, and
    plain data (numbers, text, lists) for the report's JSON twin without who was attacked
    (the fields named in ``HIDDEN``)."""

    HIDDEN: ClassVar[tuple[str, ...]] = ()
    quasi: tuple[str, ...]
    sensitive: tuple[str, ...]
    results: tuple[AttackResult, ...]

    def result(self, criterion: str, variant: str) -> AttackResult:
        for found in self.results:
            if (found.criterion, found.variant) == (criterion, variant):
                return found
        raise KeyError(f"no {criterion} attack ({variant}) in this report")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        for name in self.HIDDEN:
            del out[name]
        out["quasi"], out["sensitive"] = list(self.quasi), list(self.sensitive)
        out["results"] = [asdict(r) for r in self.results]
        return out


@dataclass(frozen=True)
class AttackReport(AttackReportData):
    HIDDEN: ClassVar[tuple[str, ...]] = ("attack_rows", "control_rows")
    method: str
    method_version: str
    seed: int  # with the same data, the same seed gives the same report
    release_kind: str  # "row-derived, shuffled", "row-derived, row by row" or "synthetic"
    design: str  # the control's design in plain words, for the report
    original_rows: int
    release_rows: int
    released_tuples: int  # distinct quasi-identifier tuples in the release
    targets: int  # people drawn for the attack sample (and as many for the control)
    quasi: tuple[str, ...]
    sensitive: tuple[str, ...]
    results: tuple[AttackResult, ...]
    # Who was attacked: row positions in the original (synthetic data: in the training and
    # the control part).  For audit and tests only: left out of `to_dict`, never printed.
    attack_rows: tuple[int, ...] = ()
    control_rows: tuple[int, ...] = ()
