"""The serializers of the assessment API, one per step: what each step accepts and returns
(``apps.assessments.api`` holds the viewset that serves them). Step 1's are in
``serializers_release.py``, Step 7's in ``serializers_deidentify.py``; here the others, and
the pieces they share (the questionnaires' answer fields, a job's block, ``with_stale``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.assessments.models import ThresholdMode
from apps.assessments.persons import LEVELS, POWER_CHOICES
from apps.core import fields as strict
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.jobs.api import JobSerializer

# --------------------------------------------------------------------------- fields


class AnswerField(serializers.ChoiceField):
    """A questionnaire answer: one of the question's answers. Documented inline as a string
    with its answers as an ``enum`` (several questions share a choice set, which as a named
    component would be one enum named many times); issue 23: documented as a bare string,
    generated clients and schemathesis sent any text, which was refused."""

    def __init__(self, question: str, answers: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(
            choices=[(a, a) for a in answers],
            help_text=f"{question} ({' | '.join(answers)})",
            **kwargs,
        )


def _answer_field(question: str, answers: tuple[str, ...], **field: Any) -> AnswerField:
    schema: dict[str, Any] = {"type": "string", "enum": list(answers)}
    if field.get("allow_null"):
        schema = {**schema, "nullable": True, "enum": [*answers, None]}
    documented = extend_schema_field(schema)(type("AnswerField", (AnswerField,), {}))
    return documented(question, answers, **field)  # type: ignore[no-any-return]


def _questionnaire(
    name: str, questions: list[tuple[str, str, tuple[str, ...]]], **field: Any
) -> type:
    fields = {
        key: _answer_field(question, answers, **field) for key, question, answers in questions
    }
    return type(name, (serializers.Serializer,), fields)


ThresholdAnswersSerializer = _questionnaire(
    "ThresholdAnswersSerializer", list(engine_threshold.INVASION_FACTORS)
)
# As read back: null answers until the questionnaire is filled in (the request needs them all).
ThresholdAnswersStateSerializer = _questionnaire(
    "ThresholdAnswersStateSerializer", list(engine_threshold.INVASION_FACTORS), allow_null=True
)
ControlsSerializer = _questionnaire(
    "ControlsSerializer",
    [(key, label, ("yes", "partial", "no")) for key, label in engine_context.CONTROLS],
    required=False,
    allow_null=True,
)
MotivesSerializer = _questionnaire(
    "MotivesSerializer", list(engine_context.MOTIVES), required=False, allow_null=True
)


def with_stale(serializer: type[serializers.Serializer[Any]]) -> type[serializers.Serializer[Any]]:
    """The response to a save: the step as saved, and the later steps it made stale."""
    name = serializer.__name__.removesuffix("Serializer")
    stale = serializers.ListField(
        child=strict.CharField(),
        read_only=True,
        help_text="Slugs of the later steps whose results must be recomputed.",
    )
    return type(f"{name}SavedSerializer", (serializer,), {"stale": stale})


# --------------------------------------------------------------------------- step blocks


class ThresholdSerializer(serializers.Serializer[Any]):
    """Step 3: the invasion-of-privacy questionnaire, and how the threshold is chosen."""

    profile = serializers.ChoiceField(
        choices=[(key, data["name"]) for key, data in engine_threshold.PROFILES.items()],
        default=engine_threshold.DEFAULT_PROFILE,
    )
    mode = serializers.ChoiceField(choices=ThresholdMode.choices, default=ThresholdMode.PROFILE)
    answers = ThresholdAnswersSerializer()
    preset = serializers.ChoiceField(
        choices=[(key, data["name"]) for key, data in engine_threshold.PRESETS.items()],
        allow_blank=True,
        default="",
        help_text="With mode = preset (needs a justification).",
    )
    custom_value = strict.FloatField(
        min_value=0.000001,
        max_value=1,
        allow_null=True,
        default=None,
        help_text="With mode = custom: a probability (needs a justification).",
    )
    justification = strict.CharField(allow_blank=True, default="")
    result = serializers.JSONField(read_only=True, allow_null=True)


class ThresholdProfileSerializer(serializers.Serializer[Any]):
    """A threshold profile offered for the assessment's release model, with its source."""

    key = strict.CharField()
    name = strict.CharField()
    edition = strict.CharField(allow_null=True)
    edition_date = strict.CharField(allow_null=True, help_text="YYYY, YYYY-MM or YYYY-MM-DD.")
    document = strict.CharField(source="source", help_text="The document the values come from.")
    threshold_source = strict.CharField(help_text="The section or table of that document.")
    read_from = strict.CharField(
        allow_null=True, help_text="Where the values were read when not in the document itself."
    )
    release_model = strict.CharField()
    measure = serializers.ChoiceField(
        choices=engine_threshold.MEASURES, help_text="The risk measure the values bound."
    )
    values = serializers.DictField(
        child=serializers.FloatField(), help_text="Threshold by level: low, medium, high."
    )


class ThresholdStateSerializer(ThresholdSerializer):
    """Step 3 as saved; before it is, the answers are null."""

    answers = ThresholdAnswersStateSerializer()
    profiles = ThresholdProfileSerializer(
        many=True,
        read_only=True,
        help_text="The profiles offered for the release model as handled (none before Step 1): "
        "a profile that sets no value for it is refused.",
    )


class ContextSerializer(serializers.Serializer[Any]):
    """Step 5: the context of the release. Controls and motives are asked for non-public
    releases only (semi-public ones use fixed values)."""

    controls = ControlsSerializer(required=False, default=dict)
    motives = MotivesSerializer(required=False, default=dict)
    prevalence = strict.FloatField(
        min_value=0,
        max_value=1,
        allow_null=True,
        default=None,
        help_text="Share of the population with the data set's condition (1: anyone could be in it).",
    )
    prevalence_source = strict.CharField(max_length=300, allow_blank=True, default="")
    acquaintances = strict.IntegerField(
        min_value=engine_context.ACQUAINTANCES_RANGE[0],
        max_value=engine_context.ACQUAINTANCES_RANGE[1],
        default=engine_context.DEFAULT_ACQUAINTANCES,
    )
    single_sex = strict.BooleanField(default=False)
    breach_rate = strict.FloatField(
        min_value=0, max_value=1, default=engine_context.DEFAULT_BREACH_RATE
    )
    breach_source = strict.CharField(
        max_length=400,
        allow_blank=True,
        default="",
        help_text="Required when the rate differs from the default.",
    )
    known_columns = serializers.ListField(
        child=strict.CharField(),
        allow_null=True,
        default=None,
        help_text="Columns the adversary already knows; null: the quasi-identifiers of Step 2.",
    )
    target_in_sample = serializers.ChoiceField(
        choices=["known", "not_known"],
        default="known",
        help_text="Whether the adversary knows their target is in the data (prosecutor) or not.",
    )
    release_model = strict.CharField(read_only=True, help_text="The effective release model.")
    result = serializers.JSONField(read_only=True, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if self.context.get("non_public"):  # the page's form requires them, too
            errors = {}
            for group, questions in (
                ("controls", engine_context.CONTROLS),
                ("motives", engine_context.MOTIVES),
            ):
                missing = {
                    q[0]: "Answer this for a non-public release."
                    for q in questions
                    if not attrs.get(group, {}).get(q[0])
                }
                if missing:
                    errors[group] = missing
            if errors:
                raise serializers.ValidationError(errors)
        return attrs

    def answers(self) -> dict[str, Any]:
        """The answers in the shape the page stores them."""
        data = {
            k: v
            for k, v in self.validated_data.items()
            if k not in ("known_columns", "target_in_sample")
        }
        data["controls"] = {k: data["controls"].get(k) for k, _ in engine_context.CONTROLS}
        data["motives"] = {k: data["motives"].get(k) for k, _, _ in engine_context.MOTIVES}
        return data


class UtilitySerializer(serializers.Serializer[Any]):
    """Step 8: why the remaining utility is acceptable for the purpose (saving accepts it)."""

    note = strict.CharField(allow_blank=True)
    accepted = strict.BooleanField(read_only=True)


class JobBlockSerializer(serializers.Serializer[Any]):
    result = serializers.JSONField(read_only=True, allow_null=True)
    job = JobSerializer(read_only=True, allow_null=True)


class RiskSerializer(JobBlockSerializer):
    """Step 4: the data risk measured by the last risk job."""

    population = serializers.JSONField(
        read_only=True,
        help_text="The population the release is a sample of: {} (not a sample, the "
        'default), {"region": key} or {"size": people}.',
    )


class PopulationSerializer(serializers.Serializer[Any]):
    region = strict.CharField(required=False, allow_blank=True, help_text="A preset key.")
    size = strict.IntegerField(required=False, allow_null=True, min_value=1)


class RiskRunSerializer(serializers.Serializer[Any]):
    population = PopulationSerializer(
        required=False,
        help_text="Optional: set the population first (see GET); omit to keep it as it is.",
    )
    power = serializers.ChoiceField(
        choices=[(p, p) for p in POWER_CHOICES],
        required=False,
        help_text="Optional, with a person key (Step 2): the adversary power, how many of a "
        "person's events an adversary knows (1 to 10, or all; 3 until set). Omit to keep it.",
    )
    dates = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Optional, with a person key: the event-level date columns and how they are "
        'measured (LONGITUDINAL.md §2.7), {"columns": [...], "mode": "absolute" (day, month, '
        'quarter, year) or "anchored" (first date per person, then intervals), "shift_days": '
        "null or N (dates released shifted per person by up to ±N days; anchored)}; null: no "
        "dates. Omit to keep them.",
    )
    event_count = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Optional, with a person key: the number of events per person as a "
        'person-level quasi-identifier (LONGITUDINAL.md §2.6), {"enabled": true, "top": '
        '"p95" | N | null} (top-code); null: not counted. Omit to keep it.',
    )


class LevelSuggestionSerializer(serializers.Serializer[Any]):
    column = strict.CharField(read_only=True)
    level = serializers.ChoiceField(choices=[(v, v) for v in LEVELS], read_only=True)
    varying_persons = strict.IntegerField(
        help_text="Persons with more than one value of the column (0: person-level).",
        read_only=True,
    )
    persons = strict.IntegerField(read_only=True)


class LongitudinalHintSerializer(serializers.Serializer[Any]):
    column = strict.CharField(
        help_text="A column that looks like a person's identifier.", read_only=True
    )
    rows = strict.IntegerField(help_text="Rows with a value in it.", read_only=True)
    distinct = strict.IntegerField(help_text="Its distinct values.", read_only=True)
    rows_per_value = strict.FloatField(read_only=True)


class PersonsSerializer(serializers.Serializer[Any]):
    """Step 2, for a data set with several rows per person (visits, claims): the column
    naming the person (a direct identifier) and each quasi-identifier's level. Risk is then
    counted in persons (Step 4)."""

    person_key = strict.CharField(
        max_length=300,
        allow_blank=True,
        help_text="A column classified as a direct identifier that names the person on each "
        "row; empty: one row per person.",
    )
    levels = serializers.DictField(
        child=serializers.ChoiceField(choices=[(v, v) for v in LEVELS]),
        required=False,
        default=dict,
        help_text="Quasi-identifier → person (one value per person) or event (may change "
        "from row to row). A quasi-identifier left out takes the level the data suggests.",
    )
    suggestions = LevelSuggestionSerializer(
        many=True,
        read_only=True,
        help_text="The level each quasi-identifier's data suggests for the person key.",
    )
    candidates = serializers.ListField(
        child=strict.CharField(),
        read_only=True,
        help_text="Columns classified as direct identifiers: the possible person keys.",
    )
    looks_longitudinal = LongitudinalHintSerializer(
        many=True,
        read_only=True,
        help_text="With no person key: columns that look like a person's identifier with "
        "far fewer distinct values than rows (several rows per person?).",
    )
    adversary_power = strict.CharField(read_only=True, help_text="Step 4's power: 1–10 or all.")
    person_dates = serializers.JSONField(
        read_only=True,
        help_text="Step 4's date settings ({dates: {columns, mode, shift_days, levels} or "
        "null, event_count: {enabled, top} or null: not counted}); set them with POST risk/.",
    )


class OverallSerializer(serializers.Serializer[Any]):
    """Step 6: data risk × context risk against the threshold, and Step 7's target."""

    release_model = strict.CharField()
    risk_unit = serializers.ChoiceField(
        choices=[("record", "record"), ("person", "person")],
        help_text="What the data risk counts: records, or persons when Step 2 declared a "
        "person key (several rows per person).",
    )
    threshold = strict.FloatField()
    context_risk = strict.FloatField()
    data_risk_target = strict.FloatField()
    risk_measure = strict.CharField()
    target_class_size = strict.IntegerField(allow_null=True)
    strict_average_cap = strict.FloatField(allow_null=True)
    data_risk = strict.FloatField(allow_null=True)
    value = strict.FloatField(allow_null=True)
    passes = strict.BooleanField(allow_null=True)
    explanation = strict.CharField(allow_blank=True)


class OverallBlockSerializer(serializers.Serializer[Any]):
    overall = OverallSerializer(allow_null=True, help_text="Null until Steps 3 and 5 are done.")


class StepStateSerializer(serializers.Serializer[Any]):
    number = strict.IntegerField()
    slug = strict.CharField()
    title = strict.CharField()
    guideline = strict.CharField()
    summary = strict.CharField()
    state = serializers.ChoiceField(choices=["done", "stale", "to do"])
    done = strict.BooleanField()
    stale = strict.BooleanField()


ThresholdSavedSerializer = with_stale(ThresholdStateSerializer)
ContextSavedSerializer = with_stale(ContextSerializer)
UtilitySavedSerializer = with_stale(UtilitySerializer)
PersonsSavedSerializer = with_stale(PersonsSerializer)


# --------------------------------------------------------------------------- representations
