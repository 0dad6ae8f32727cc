"""The audit page's filters (GET)."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from apps.audit.models import KNOWN_ACTIONS


class AuditFilterForm(forms.Form):
    action = forms.ChoiceField(required=False)
    actor = forms.CharField(required=False, max_length=150, label="Actor (username)")
    object_id = forms.CharField(required=False, max_length=64, label="Object id")
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    q = forms.CharField(required=False, max_length=200, label="Text")

    def __init__(self, *args: Any, recorded_actions: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        codes = sorted(set(KNOWN_ACTIONS) | set(recorded_actions))
        cast(forms.ChoiceField, self.fields["action"]).choices = [("", "Any action")] + [
            (code, f"{code} — {KNOWN_ACTIONS[code]}" if code in KNOWN_ACTIONS else code)
            for code in codes
        ]
