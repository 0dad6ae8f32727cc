"""Serializer fields that take JSON as typed: a number is not a text, a text not a number.

DRF coerces: ``"reason": 12`` becomes "12", ``"size": "12"`` becomes 12, ``"keep": "no"``
becomes False and an integer becomes a UUID. The schema promises types, so a request that
breaks them is refused (400, naming the field) instead of being read as something the caller
did not write. Form and query input is all text: these fields accept text wherever text is
the documented type (CharField, SlugField, UUIDField), so they serve uploads and filters too,
but IntegerField, FloatField and BooleanField are for JSON bodies only; a whole number in a
query string is a ``QueryIntegerField`` (digits, nothing else).
"""

from __future__ import annotations

import math
import re
from typing import Any

from rest_framework import serializers


def _is_number(data: Any) -> bool:
    return isinstance(data, (int, float)) and not isinstance(data, bool)


class CharField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class SlugField(serializers.SlugField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class UUIDField(serializers.UUIDField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class IntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        # 3.0 is the integer 3 in JSON Schema; "3" and true are not.
        if not _is_number(data) or (isinstance(data, float) and not data.is_integer()):
            self.fail("invalid")
        return super().to_internal_value(data)


class FloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        # JSON reads 1e400 as infinity, and float() of a 400-digit integer overflows.
        try:
            finite = _is_number(data) and math.isfinite(float(data))
        except OverflowError:
            finite = False
        if not finite:
            self.fail("invalid")
        return super().to_internal_value(data)


class BooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return bool(data)


class QueryIntegerField(serializers.IntegerField):
    """A whole number written in a URL: digits only. DRF's own field reads ``240.0``, ``+3``
    and `` 7`` as integers, which the schema (type integer) says they are not."""

    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, str) or not re.fullmatch(r"-?[0-9]+", data):
            self.fail("invalid")
        return super().to_internal_value(data)
