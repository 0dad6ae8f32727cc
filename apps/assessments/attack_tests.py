"""Attack tests on every applied release (issue 28): singling out, linkability and inference,
run by the apply job on the released file against the original (``apps.engine.attacks``),
kept in the applied result, and shown the same way in Step 8, the review and the report.

The adversary is the threat model's (Step 5): they hold the known columns of the people they
look for — the quasi-identifiers among them, seen through the applied generalization (the
recipient can read it off the release), and any other known column released unchanged.
Each attack is reported against a held-back control and a naive baseline, with 95 % Wilson
intervals, the number of attacks, the seed and the method's version; the verdict compares
the attack with the release's data-risk target (IPC 2016, step 6: the probability of
re-identification given an attempt must not exceed it).  ISO/IEC 27559 §8.2.3 asks for this
adversarial testing; the criteria are the Article 29 Working Party's (Opinion 05/2014).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apps.assessments.hierarchies import hierarchy_of
from apps.engine.attacks import QuasiIdentifier, attack_release
from apps.engine.errors import EngineError

CRITERION_LABELS = {
    "singling_out": "Singling out",
    "linkability": "Linkability",
    "inference": "Inference",
}


def seed_of(key: Any) -> int:
    """The seed of a release's attacks, from what identifies the release (the assessment
    and the applied levels): applying the same solution again, or a re-delivered job,
    draws the same people and gives the same figures."""
    import hashlib

    return int(hashlib.sha256(str(key).encode()).hexdigest()[:15], 16)


def release_attacks(
    data: Any,
    released: Any,
    *,
    quasi: list[str],
    hierarchies: dict[str, Any],
    levels: dict[str, int],
    sensitive: list[str],
    known_columns: list[str],
    masked: list[str],
    data_risk_target: float,
    seed_key: Any,
    blanks: bool = False,
) -> dict[str, Any]:
    """Attack the release; never raises on the data: a release the attacks cannot read
    is recorded as not tested, with the reason (Step 8 and the report say so)."""
    names = released.collect_schema().names()
    known = [c for c in known_columns if c in quasi]
    others = [c for c in known_columns if c not in quasi and c in names and c not in masked]
    left_out = [c for c in known_columns if c not in known and c not in others]
    attackers = [
        QuasiIdentifier.from_hierarchy(hierarchy_of(hierarchies[q]), levels[q]) for q in known
    ]
    attackers += [QuasiIdentifier(c) for c in others]
    guessed = [s for s in sensitive if s in names and s not in known_columns]
    return attacks_tested(
        lambda: attack_release(
            data,
            released,
            quasi=attackers,
            sensitive=guessed,
            seed=seed_of(seed_key),
            blank_is_wildcard=blanks,
        ),
        known_columns=known_columns,
        attacked_on=[q.column for q in attackers],
        left_out=left_out,
        data_risk_target=data_risk_target,
    )


def attacks_tested(
    attack: Callable[[], Any],
    *,
    known_columns: list[str],
    attacked_on: list[str],
    left_out: list[str],
    data_risk_target: float,
    unit: str = "record",
) -> dict[str, Any]:
    """Run an engine attack (records: ``attack_release``; persons:
    ``attack_persons``, ``person_attack_tests``) and keep its report in the one shape
    Step 8, the review, the report and the summary read: never raises on the data; a
    release the attacks cannot read is recorded as not tested, with the reason."""
    base = {
        "unit": unit,
        "known_columns": known_columns,
        "attacked_on": attacked_on,
        "known_not_released": left_out,
        "tolerance": min(float(data_risk_target), 1.0),
    }
    if not attacked_on:
        return {
            **base,
            "status": "not_run",
            "reason": "The adversary is given no column the release shows (Step 5's known "
            "columns): there is nothing to attack with.",
        }
    try:
        report = attack()
    except EngineError as exc:
        return {**base, "status": "not_run", "reason": f"The attacks could not be run: {exc}"}
    return {**base, "status": "done", **report.to_dict()}


def _percent(value: float) -> str:
    return f"{value * 100:.1f} %"


def verdict(
    result: dict[str, Any], tolerance: float, *, synthetic: bool = False, persons: bool = False
) -> dict[str, Any]:
    """A plain-language verdict: linkability and singling out against the naive baseline,
    inference against the control (what the release tells of anyone, in it or not).

    Synthetic data is judged against the control for every criterion: its control people
    were held back before the generator learnt, so what the intruder achieves on them is
    what the patterns alone give (a synthetic copy of a held-back person is chance, not a
    leak); success beyond it on the people learnt from is what the generator remembered."""
    attack = result["attack"]["rate"]
    inference = result["criterion"] == "inference" or synthetic
    reference = result["control"]["rate"] if inference else result["baseline"]["rate"]
    against = (
        "people held back from the generator (control)"
        if synthetic
        else "people not in the data (control)"
        if inference
        else "a naive intruder (baseline)"
    )
    gap = attack - reference
    within = gap <= tolerance + 1e-12
    what = {
        "singling_out": "isolates the person" if persons else "isolates the person's record",
        "linkability": "links the person to their own pseudonym"
        if persons
        else "links the person to their own record",
        "inference": f"guesses the person's {result['variant']}",
    }[result["criterion"]]
    text = (
        f"The intruder {what} in {_percent(attack)} of the attacks, "
        f"{gap * 100:+.1f} points against {against}: "
        + (
            f"within the data-risk target of {_percent(tolerance)}."
            if within
            else f"more than the data-risk target of {_percent(tolerance)} allows."
        )
    )
    return {"within": within, "gap": gap, "text": text}


def attack_rows(attacks: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per attack for the Step 8 table, the review page and the report."""
    if not attacks or attacks.get("status") != "done":
        return []
    tolerance = float(attacks.get("tolerance") or 0)
    rows = []
    for result in attacks.get("results") or []:
        label = CRITERION_LABELS.get(result["criterion"], result["criterion"])
        variant = result["variant"]
        rows.append(
            {
                "attack": f"{label} ({variant})"
                if result["criterion"] != "inference"
                else f"{label} of {variant}",
                "question": result["question"],
                "attack_rate": result["attack"],
                "control": result["control"],
                "baseline": result["baseline"],
                "attacks": result["attacks"],
                "seed": attacks["seed"],
                "method_version": attacks["method_version"],
                "unit": attacks.get("unit") or "record",
                "verdict": verdict(
                    result,
                    tolerance,
                    synthetic=attacks.get("release_kind") == "synthetic",
                    persons=attacks.get("unit") == "person",
                ),
            }
        )
    return rows


def _fact_words(fact: dict[str, Any]) -> str:
    columns = ", ".join(fact.get("columns") or [])
    if fact["fact"] == "event_count":
        top = fact.get("top_code")
        beyond = f', "{top} or more" beyond the top-code' if top else ""
        return f"the number of events ({fact['level']}{beyond})"
    if fact["fact"] == "anchor":
        return f"the first event date ({fact['level']}; from {columns})"
    return (
        f"the intervals between the person's events ({fact['level']}; what the date shift "
        f"leaves of {columns})"
    )


def known_facts(attacks: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The derived person-level facts the adversary of a person release's attack tests
    knows (``person_attack_tests``: the number of events with its top-code, the anchor,
    what a date shift leaves), each with its words: the one list Step 8, the review, the
    report and the recipient summary (its PDF and its JSON twin) show."""
    if not attacks or attacks.get("status") != "done":
        return []
    return [
        {
            "fact": str(fact["fact"]),
            "level": fact.get("level"),
            "top_code": fact.get("top_code"),
            "columns": list(fact.get("columns") or []),
            "text": _fact_words(fact),
        }
        for fact in attacks.get("derived") or []
    ]


__all__ = ["attack_rows", "attacks_tested", "known_facts", "release_attacks", "verdict"]
