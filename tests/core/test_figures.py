"""Figures a person reads keep 4 significant digits and are never shown as 0.0000 when they
are not zero (issue #13)."""

from __future__ import annotations

from apps.core.templatetags.deid import significant


def test_four_significant_digits_never_zero_for_a_non_zero_value() -> None:
    assert significant(1.0) == "1"
    assert significant(0.1) == "0.1"
    assert significant(1 / 11) == "0.09091"
    assert significant(1 / 6) == "0.1667"
    assert significant(0.00012346) == "0.0001235"
    assert significant(1e-6) == "0.000001"
    assert significant(0) == "0"
    assert significant(None) == "—"
    assert "e" not in significant(3e-9) and significant(3e-9) != "0"
