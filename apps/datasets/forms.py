from typing import Any

from django import forms

DELIMITERS = [
    ("", "Detect"),
    (",", "Comma ,"),
    (";", "Semicolon ;"),
    ("\t", "Tab"),
    ("|", "Pipe |"),
]
ENCODINGS = [
    ("", "Detect"),
    ("utf-8", "UTF-8"),
    ("utf-8-sig", "UTF-8 with BOM"),
    ("cp1252", "Windows-1252"),
    ("latin-1", "ISO-8859-1 (Latin-1)"),
    ("utf-16", "UTF-16"),
]


class DatasetUploadForm(forms.Form):
    file = forms.FileField(
        allow_empty_file=True,  # the ingest step explains an empty file better than the form
        help_text="CSV or TSV, Excel (.xlsx), Parquet, SAS (.sas7bdat, .xpt), SPSS (.sav, .zsav, "
        ".por) or Stata (.dta).",
    )
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the file name.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    delimiter = forms.ChoiceField(choices=DELIMITERS, required=False, help_text="CSV/TSV only.")
    encoding = forms.ChoiceField(choices=ENCODINGS, required=False, help_text="CSV/TSV only.")
    sheet = forms.CharField(
        max_length=100, required=False, help_text="Excel only; first sheet by default."
    )


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files from one input (each checked as a FileField would)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class DatasetTablesUploadForm(forms.Form):
    persons = forms.FileField(
        allow_empty_file=True,
        label="Person table",
        help_text="One row per person: the person key and what is known once per person "
        "(sex, year of birth, region). Any format a single upload accepts.",
    )
    events = MultipleFileField(
        allow_empty_file=True,
        label="Event tables",
        help_text="One or more files (visits, claims, prescriptions): one row per event, "
        "each with the person key. Select them together.",
    )
    person_key = forms.CharField(
        max_length=300,
        label="Person key",
        help_text="The column, present in every table, that names the person.",
    )
    name = forms.CharField(
        max_length=200, required=False, help_text="Defaults to the person table's name."
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
