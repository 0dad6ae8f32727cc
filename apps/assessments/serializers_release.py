"""Step 1's serializers: the release model and the recipient, as saved and as requested. The
request is documented as one of four shapes (issue 23), the rules of
``services.assessment_set_release`` a JSON Schema can state; the other steps' serializers
are in ``serializers.py``."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from apps.assessments.models import AgreementKind
from apps.assessments.serializers import with_stale
from apps.core import fields as strict
from apps.datasets.models import ReleaseModel

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


ReleaseSavedSerializer = with_stale(ReleaseStateSerializer)
