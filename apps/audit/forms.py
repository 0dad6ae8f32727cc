"""The audit page's filters (GET)."""

from __future__ import annotations

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

    def __init__(self, *args: object, recorded_actions: list[str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        codes = sorted(set(KNOWN_ACTIONS) | set(recorded_actions))
        self.fields["action"].choices = [("", "Any action")] + [
            (code, f"{code} — {KNOWN_ACTIONS[code]}" if code in KNOWN_ACTIONS else code)
            for code in codes
        ]
