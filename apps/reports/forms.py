from __future__ import annotations

from django import forms

MAX_REPORT_BYTES = 50 * 1024 * 1024


class ReportVerifyForm(forms.Form):
    file = forms.FileField(
        label="Report (PDF)",
        help_text="The signed Step 9 report as you received it. It is checked, not stored.",
        widget=forms.ClearableFileInput(attrs={"accept": "application/pdf,.pdf"}),
    )

    twin = forms.FileField(
        label="JSON twin (recipient summaries only)",
        required=False,
        help_text="For a recipient summary: the JSON file delivered with it. Its SHA-256 is "
        "checked against the digest the signed summary carries.",
        widget=forms.ClearableFileInput(attrs={"accept": "application/json,.json"}),
    )

    def clean_twin(self):  # type: ignore[no-untyped-def]
        upload = self.cleaned_data.get("twin")
        if upload is not None and upload.size > MAX_REPORT_BYTES:
            raise forms.ValidationError("That file is far larger than any summary's JSON twin.")
        return upload

    def clean_file(self):  # type: ignore[no-untyped-def]
        upload = self.cleaned_data["file"]
        if upload.size > MAX_REPORT_BYTES:
            raise forms.ValidationError(
                "That file is far larger than any report; it was not checked."
            )
        return upload
