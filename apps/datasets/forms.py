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
