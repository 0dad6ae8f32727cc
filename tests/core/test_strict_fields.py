"""JSON is read as typed: DRF would turn 12 into "12", "12" into 12 and 1 into a UUID."""

import uuid

import pytest
from rest_framework import serializers

from apps.core import fields as strict


class Body(serializers.Serializer):
    text = strict.CharField(required=False)
    slug = strict.SlugField(required=False)
    id = strict.UUIDField(required=False)
    count = strict.IntegerField(required=False)
    share = strict.FloatField(required=False)
    flag = strict.BooleanField(required=False)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("text", 12),
        ("text", ["a"]),
        ("slug", 7),
        ("id", 1),
        ("count", "12"),
        ("count", 1.5),
        ("count", True),
        ("share", "0.5"),
        ("share", False),
        ("share", 10**400),
        ("share", float("inf")),
        ("flag", "true"),
        ("flag", 1),
    ],
)
def test_a_value_of_another_json_type_is_refused(field, value):
    body = Body(data={field: value})
    assert not body.is_valid()
    assert list(body.errors) == [field]


def test_values_of_the_documented_types_are_read():
    key = uuid.uuid4()
    body = Body(
        data={"text": "a", "slug": "b-c", "id": str(key), "count": 3.0, "share": 1, "flag": False}
    )
    assert body.is_valid(), body.errors
    assert body.validated_data == {
        "text": "a",
        "slug": "b-c",
        "id": key,
        "count": 3,
        "share": 1.0,
        "flag": False,
    }
