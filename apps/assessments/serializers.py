"""The serializers of the assessment API, one per step: what each step accepts and returns
(``apps.assessments.api`` holds the viewset that serves them)."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
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
from apps.assessments.models import (
    AgreementKind,
    HierarchySpec,
    ThresholdMode,
)
from apps.assessments.persons import LEVELS, POWER_CHOICES
from apps.assessments.release_reasons import GROUNDS
from apps.core import fields as strict
from apps.datasets.models import ReleaseModel
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.jobs.api import JobSerializer

RELEASE_MODELS = [
    (
        ReleaseModel.PUBLIC.value,
        "Public: anyone, no conditions (an access request counts as public)",
    ),
    (ReleaseModel.SEMI_PUBLIC.value, "Semi-public: anyone who registers and accepts terms of use"),
    (
        ReleaseModel.NON_PUBLIC.value,
        "Non-public: named recipients bound by a data sharing agreement",
    ),
]


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


def _with_stale(serializer: type[serializers.Serializer[Any]]) -> type[serializers.Serializer[Any]]:
    """The response to a save: the step as saved, and the later steps it made stale."""
    name = serializer.__name__.removesuffix("Serializer")
    stale = serializers.ListField(
        child=strict.CharField(),
        read_only=True,
        help_text="Slugs of the later steps whose results must be recomputed.",
    )
    return type(f"{name}SavedSerializer", (serializer,), {"stale": stale})


# --------------------------------------------------------------------------- step blocks


class ReleaseSerializer(serializers.Serializer[Any]):
    """Step 1: the release model and the recipient."""

    release_model = serializers.ChoiceField(choices=RELEASE_MODELS)
    recipient_organization = strict.CharField(max_length=200, allow_blank=True, default="")
    recipient_contact = strict.CharField(max_length=200, allow_blank=True, default="")
    purpose = strict.CharField(allow_blank=True, default="")
    agreement_kind = serializers.ChoiceField(
        choices=AgreementKind.choices, allow_blank=True, default=""
    )
    agreement_reference = strict.CharField(max_length=300, allow_blank=True, default="")
    agreement_date = serializers.DateField(allow_null=True, default=None)
    recipients = serializers.ListField(
        child=strict.CharField(max_length=200),
        max_length=50,
        default=list,
        help_text="The recipients, named one by one (identifiability is judged per recipient, "
        "C-413/23 P); empty: the recipient organization.",
    )
    pseudonym_linkers = strict.CharField(
        max_length=500,
        allow_blank=True,
        default="",
        help_text="Pseudonymisation domain (EDPB 01/2025): who can link pseudonyms back.",
    )
    pseudonym_key_kept = strict.CharField(
        max_length=500,
        allow_blank=True,
        default="",
        help_text="Where the key or linking table is kept, apart from the release.",
    )
    effective_release_model = strict.CharField(
        read_only=True,
        help_text="How the release is handled: a non-public release without a data sharing "
        "agreement counts as semi-public.",
    )


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


class ReleaseStateSerializer(ReleaseSerializer):
    """Step 1 as saved; before it is, the release model is empty."""

    release_model = serializers.ChoiceField(
        choices=RELEASE_MODELS, allow_blank=True, help_text="Empty until Step 1 is saved."
    )


# Step 1's request as the schema states it: one of four shapes (issue 23). The rules of
# ``services.assessment_set_release`` that a JSON Schema can state become ``oneOf`` branches:
# a semi-public or non-public release names its recipient, and an agreement has a reference
# (each a text with something other than spaces). ``ReleaseSerializer`` reads every request;
# these document which ones it accepts.
_SOMETHING = RegexValidator(r"\S", "Write something other than spaces.")


PUBLIC_RELEASE_MODELS = RELEASE_MODELS[:1]
NAMED_RELEASE_MODELS = RELEASE_MODELS[1:]  # those that name their recipient


class _PublicRelease(serializers.Serializer[Any]):
    release_model = serializers.ChoiceField(choices=PUBLIC_RELEASE_MODELS)


class _NamedRelease(serializers.Serializer[Any]):
    release_model = serializers.ChoiceField(choices=NAMED_RELEASE_MODELS)
    recipient_organization = strict.CharField(
        max_length=200,
        validators=[_SOMETHING],
        help_text="Required: a semi-public or non-public release goes to someone identifiable.",
    )


@extend_schema_field({"type": "string", "maxLength": 0, "default": ""})
class _NoAgreementKind(serializers.ChoiceField):
    """No agreement: the blank kind alone (documented as the empty text, not as an enum of
    one blank, which the schema's enum hook would make an empty enum)."""


class _NoAgreement(serializers.Serializer[Any]):
    agreement_kind = _NoAgreementKind(choices=[""], allow_blank=True, default="")


class _Agreement(serializers.Serializer[Any]):
    agreement_kind = serializers.ChoiceField(choices=[c for c in AgreementKind.choices if c[0]])
    agreement_reference = strict.CharField(
        max_length=300,
        validators=[_SOMETHING],
        help_text="Required with an agreement: its title, number or file, to find it again.",
    )


def _release_shape(name: str, model: type, agreement: type, doc: str) -> type:
    return type(name, (agreement, model, ReleaseSerializer), {"__doc__": doc})


RELEASE_SHAPES = [
    _release_shape("PublicReleaseSerializer", _PublicRelease, _NoAgreement, "Public."),
    _release_shape(
        "PublicReleaseUnderAgreementSerializer",
        _PublicRelease,
        _Agreement,
        "Public, under an agreement (named by its reference).",
    ),
    _release_shape(
        "NamedReleaseSerializer",
        _NamedRelease,
        _NoAgreement,
        "Semi-public or non-public: the recipient is named.",
    ),
    _release_shape(
        "NamedReleaseUnderAgreementSerializer",
        _NamedRelease,
        _Agreement,
        "Semi-public or non-public, the recipient named, under an agreement.",
    ),
]


@extend_schema_serializer(component_name="Release")
class ReleaseRequestSerializer(ReleaseSerializer):
    """Step 1's request, documented as one of ``RELEASE_SHAPES`` (``_ReleaseShapes``)."""


class _ReleaseShapes(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    target_class = ReleaseRequestSerializer

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        shapes = [auto_schema.resolve_serializer(s, direction).ref for s in RELEASE_SHAPES]
        # "required" makes drf-spectacular mark the request body required (every shape
        # requires the model); the component is written with the oneOf alone
        return {"oneOf": shapes, "required": ["release_model"]}


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


class SearchSerializer(JobBlockSerializer):
    """Step 7: the optimal search's result (optimum and alternatives) and the chosen levels."""

    chosen_levels = serializers.DictField(
        child=strict.IntegerField(), read_only=True, allow_null=True
    )


class ApplySerializer(JobBlockSerializer):
    """Step 7: the applied de-identification (figures Step 8 measures)."""


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


class HierarchySerializer(serializers.Serializer[Any]):
    """How one quasi-identifier is generalized, with the groups at every level."""

    column = strict.CharField(read_only=True)
    kind = serializers.ChoiceField(choices=HierarchySpec.Kind.choices)
    params = serializers.DictField(
        default=dict,
        help_text="interval: widths, bottom, top, bottom_label, top_label; date: levels; "
        "prefix: lengths; categorical: levels (list of {group: [values]}; left out for a role "
        "not allowed raw values), keep_ungrouped.",
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


class StepStateSerializer(serializers.Serializer[Any]):
    number = strict.IntegerField()
    slug = strict.CharField()
    title = strict.CharField()
    guideline = strict.CharField()
    summary = strict.CharField()
    state = serializers.ChoiceField(choices=["done", "stale", "to do"])
    done = strict.BooleanField()
    stale = strict.BooleanField()


class PreviewSerializer(serializers.Serializer[Any]):
    columns = serializers.ListField(child=strict.CharField())
    rows = serializers.ListField(child=serializers.ListField(child=serializers.JSONField()))


ReleaseSavedSerializer = _with_stale(ReleaseStateSerializer)
ThresholdSavedSerializer = _with_stale(ThresholdStateSerializer)
ContextSavedSerializer = _with_stale(ContextSerializer)
DeidConfigSavedSerializer = _with_stale(DeidConfigSerializer)
UtilitySavedSerializer = _with_stale(UtilitySerializer)
PersonsSavedSerializer = _with_stale(PersonsSerializer)
SearchSavedSerializer = _with_stale(SearchSerializer)
HierarchySavedSerializer = _with_stale(HierarchySerializer)


# --------------------------------------------------------------------------- representations
