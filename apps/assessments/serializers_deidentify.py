"""Step 7's serializers: the settings (masking, suppression, metric, maximum levels, privacy
models), the hierarchies, the search and the choice of a solution, the released columns'
findings, the applied file and its preview. The other steps' are in ``serializers.py``."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.assessments.configuration import (
    DEFAULT_SUPPRESSION_LIMIT,
    MASKING_METHODS,
    MAX_KEPT_CHARACTERS,
    METRICS,
    PSEUDONYM_LENGTHS,
    DeidConfig,
    parse,
)
from apps.assessments.models import HierarchySpec
from apps.assessments.release_reasons import GROUNDS
from apps.assessments.serializers import JobBlockSerializer, with_stale
from apps.core import fields as strict


class MaskingSerializer(serializers.Serializer[Any]):
    method = serializers.ChoiceField(choices=MASKING_METHODS)
    length = strict.IntegerField(
        min_value=PSEUDONYM_LENGTHS[0],
        max_value=PSEUDONYM_LENGTHS[1],
        required=False,
        help_text="Hex characters of a keyed (hmac) or random pseudonym (default 32).",
    )
    keep_leading = strict.IntegerField(
        min_value=0,
        max_value=MAX_KEPT_CHARACTERS,
        default=0,
        help_text="For character masking.",
    )
    keep_trailing = strict.IntegerField(
        min_value=0,
        max_value=MAX_KEPT_CHARACTERS,
        default=0,
        help_text="For character masking.",
    )


class PrivacyModelSerializer(serializers.Serializer[Any]):
    column = strict.CharField(help_text="A sensitive variable.")
    spec = strict.CharField(
        help_text="distinct-l=L, entropy-l=L, recursive-cl=C,L, equal-t=T or ordered-t=T "
        "(ARX's definitions)."
    )


class DeidConfigSerializer(serializers.Serializer[Any]):
    """Step 7 settings: masking per direct identifier, suppression limit, metric, maximum
    generalization levels per quasi-identifier."""

    masking = serializers.DictField(
        child=MaskingSerializer(),
        default=dict,
        help_text="Direct identifier → masking; a direct identifier left out is removed.",
    )
    suppression_limit = strict.FloatField(
        min_value=0,
        max_value=1,
        default=DEFAULT_SUPPRESSION_LIMIT,
        help_text="Share of records that may be suppressed (0.05 = 5%).",
    )
    event_suppression_limit = strict.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        help_text="Data with a person key: share of events that may be suppressed (the "
        "person keeps their other events); the suppression limit then counts persons. Left "
        "out = unchanged.",
    )
    metric = serializers.ChoiceField(choices=METRICS, default="loss")
    max_levels = serializers.DictField(
        child=strict.IntegerField(min_value=0),
        default=dict,
        help_text="Quasi-identifier → highest generalization level the search may use.",
    )
    privacy_models = PrivacyModelSerializer(
        many=True,
        required=False,
        help_text="Privacy models every released group must also meet, one per sensitive "
        "variable; left out = unchanged, [] = none.",
    )
    csv_formula_guard = strict.BooleanField(
        default=True,
        help_text="Prefix with ' every text cell of the released CSV that starts with =, +, "
        "-, @, a tab or a carriage return, so that a spreadsheet shows it as text instead of "
        "running it as a formula (OWASP CSV injection). Numeric columns, plain signed numbers "
        "(-5, +3.25) and the Parquet file are never altered. Turn off only for analysis "
        "pipelines that need the raw values.",
    )
    direct_identifiers = serializers.ListField(child=strict.CharField(), read_only=True)

    def config(self, *, base: DeidConfig) -> DeidConfig:
        """The settings sent, over ``base`` (privacy models left out keep its own), through
        the one parser the page uses too."""
        data = {**self.validated_data}
        data["masking"] = {c: dict(m) for c, m in data["masking"].items()}
        if "privacy_models" in data:
            data["privacy_models"] = [dict(m) for m in data["privacy_models"]]
        return parse(data, base=base)


def _person_suppression_field() -> serializers.DictField:
    """Step 7's person-level suppression figures (search and apply blocks)."""
    return serializers.DictField(
        read_only=True,
        allow_null=True,
        help_text="Person-level results: what was suppressed, read from the stored figures "
        "with the words of their counting ('events_counted_once', or 'legacy' for results "
        "stored before each removed event was counted once); null at record level.",
    )


class SearchSerializer(JobBlockSerializer):
    """Step 7: the optimal search's result (optimum and alternatives) and the chosen levels."""

    chosen_levels = serializers.DictField(
        child=strict.IntegerField(), read_only=True, allow_null=True
    )
    person_suppression = _person_suppression_field()


class ApplySerializer(JobBlockSerializer):
    """Step 7: the applied de-identification (figures Step 8 measures)."""

    person_suppression = _person_suppression_field()


class ChooseSerializer(serializers.Serializer[Any]):
    levels = serializers.DictField(
        child=strict.IntegerField(min_value=0),
        help_text="Quasi-identifier → level: the optimum or one of the search's alternatives.",
    )


class IdentifiersReviewedSerializer(serializers.Serializer[Any]):
    column = strict.CharField(help_text="A released column in which identifiers were found.")
    reason = strict.CharField(
        allow_blank=True,
        help_text="Why what the detectors found is not identifying: a sentence (at least 6 "
        "words) naming what was found, unless a ground is chosen. Empty, with no ground, "
        "withdraws an earlier explanation.",
    )
    ground = serializers.ChoiceField(
        choices=[g.key for g in GROUNDS],
        required=False,
        default="",
        allow_blank=True,
        help_text="One of the fixed grounds instead of (or besides) a reason: "
        + "; ".join(f"{g.key}: {g.text}" for g in GROUNDS),
    )


class ColumnFindingSerializer(serializers.Serializer[Any]):
    """A released column (not a quasi-identifier) measured as if an intruder knew it."""

    column = strict.CharField()
    role = strict.CharField(help_text="Its Step 2 role: other, or direct (character-masked).")
    kinds = serializers.ListField(
        child=strict.CharField(),
        help_text="small_cells, uniques, risk, predicts:<sensitive variable>.",
    )
    findings = serializers.ListField(child=strict.CharField(), help_text="Each finding in words.")
    hard = strict.BooleanField(
        help_text="A direct identifier released character-masked or scrubbed whose values "
        "single people out: no explanation lifts the block."
    )
    grounds = serializers.ListField(
        child=serializers.ListField(child=strict.CharField()),
        help_text="The grounds that can answer every finding: [key, text].",
    )
    reviewed = strict.CharField(help_text="The analyst's explanation, if it answers them all.")
    reviewed_by = strict.CharField()


class IdentifierFindingSerializer(serializers.Serializer[Any]):
    column = strict.CharField()
    role = strict.CharField()
    values = strict.IntegerField(help_text="Non-missing released values scanned.")
    rows_with_spans = strict.IntegerField()
    spans = serializers.DictField(child=strict.IntegerField(), help_text="Type → spans.")
    in_words = strict.CharField()
    examples = serializers.ListField(
        child=strict.CharField(), help_text="Values with spans, detected spans masked."
    )
    kinds = serializers.ListField(child=strict.CharField(), help_text="The span types found.")
    grounds = serializers.ListField(
        child=serializers.ListField(child=strict.CharField()),
        help_text="The grounds that can answer every finding: [key, text].",
    )
    reviewed = strict.CharField(
        help_text="The analyst's explanation, if it answers every span type found."
    )
    reviewed_by = strict.CharField()


class HierarchySerializer(serializers.Serializer[Any]):
    """How one quasi-identifier is generalized, with the groups at every level."""

    column = strict.CharField(read_only=True)
    kind = serializers.ChoiceField(choices=HierarchySpec.Kind.choices)
    params = serializers.DictField(
        default=dict,
        help_text="interval: widths, bottom, top, bottom_label, top_label; date: levels; "
        "prefix: lengths; categorical: levels (list of {group: [values]}; left out for a role "
        "not allowed raw values), keep_ungrouped; icd10, icd9cm: lenient (true: a value "
        "outside the classification is released at its chapter or as *, instead of refused).",
    )
    arx_text = strict.CharField(
        write_only=True, allow_blank=True, default="", help_text="With kind = arx: value;level1;…"
    )
    arx_csv = strict.CharField(
        read_only=True,
        allow_null=True,
        help_text="Every original value with its generalizations; null for a role not allowed "
        "raw values (reviewers), who get the groups of each level in preview instead.",
    )
    height = strict.IntegerField(read_only=True)
    level_labels = serializers.ListField(child=strict.CharField(), read_only=True)
    preview = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text="Per level: name, number of groups, smallest group, largest groups as "
        "[value, records]. For a role not allowed raw values, a group that is an original "
        "value held by fewer records than the threshold's class size has a null value.",
    )


class PreviewSerializer(serializers.Serializer[Any]):
    columns = serializers.ListField(child=strict.CharField())
    rows = serializers.ListField(child=serializers.ListField(child=serializers.JSONField()))


DeidConfigSavedSerializer = with_stale(DeidConfigSerializer)
SearchSavedSerializer = with_stale(SearchSerializer)
HierarchySavedSerializer = with_stale(HierarchySerializer)
