"""Bad input through the page and the API: a clear message, and nothing saved is lost."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.datasets.models import Dataset
from apps.jobs.models import Job

GOOD = b"name,age,sex\nAlice,34,F\nBob,51,M\n"

BAD = [
    ("empty.csv", b"", "empty_file", "empty"),
    ("header_only.csv", b"name,age\n", "no_data_rows", "no data rows"),
    ("ragged.csv", b"a,b,c\n1,2,3\n4,5\n6,7,8\n", "ragged_rows", "line 3"),
    ("dupes.csv", b"age,sex,age\n1,F,2\n", "duplicate_columns", "age"),
    ("blank_name.csv", b"age,,sex\n1,2,F\n", "empty_column_name", "2"),
    ("latin.csv", "nom,ville\nRené,Montréal\n".encode("cp1252"), "encoding", "line 2"),
    ("fake.xlsx", b"name,age\nA,1\n", "format_mismatch", "xlsx"),
    ("fake.parquet", b"name,age\nA,1\n", "format_mismatch", "parquet"),
    ("notes.docx", b"PK\x03\x04whatever", "unsupported_format", "docx"),
]


@pytest.fixture
def existing(custodian, analyst):
    from apps.datasets.services import dataset_upload

    return dataset_upload(
        organization=custodian, user=analyst, upload=SimpleUploadedFile("keep.csv", GOOD)
    )


def stored_files() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("filename", "content", "code", "fragment"), BAD)
def test_api_refuses_bad_input_with_a_clear_message_and_keeps_what_was_saved(
    client_for, analyst, custodian, existing, filename, content, code, fragment
):
    before_files = stored_files()
    before = Dataset.objects.count(), Job.objects.count()
    kwargs = {}
    if filename == "latin.csv":
        kwargs["encoding"] = "utf-8"  # declared wrongly: the bytes are Windows-1252
    response = client_for(analyst).post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile(filename, content), **kwargs},
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["extra"]["code"] == code
    assert body["extra"]["file"] == filename
    assert fragment.lower() in (body["message"] + " " + body["extra"]["where"]).lower()
    assert (Dataset.objects.count(), Job.objects.count()) == before
    assert stored_files() == before_files
    existing.refresh_from_db()
    assert existing.rows == 2


def test_page_shows_the_message_next_to_the_file_field(client_for, analyst, custodian):
    url = reverse("dataset-upload", kwargs={"org": custodian.slug})
    response = client_for(analyst).post(
        url, {"file": SimpleUploadedFile("ragged.csv", b"a,b\n1,2\n3\n")}
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "line 3" in text.lower()
    assert 'role="alert"' in text
    assert not Dataset.objects.exists()


def test_oversized_upload_is_refused_by_the_organization_limit(
    client_for, analyst, custodian, existing
):
    custodian.upload_limit_bytes = 1024
    custodian.save()
    big = b"name,age\n" + b"Someone,42\n" * 500  # 5.5 kB
    url = reverse("dataset-upload", kwargs={"org": custodian.slug})
    response = client_for(analyst).post(url, {"file": SimpleUploadedFile("big.csv", big)})
    assert response.status_code == 413
    assert "upload limit of 1.0" in response.content.decode()
    assert Dataset.objects.count() == 1
    # Through the API the organization's limit is enforced by the service.
    api = client_for(analyst).post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile("big.csv", big)},
    )
    assert api.status_code == 400
    assert api.json()["extra"]["code"] == "too_large"
    assert Dataset.objects.count() == 1


def test_site_wide_limit_stops_the_stream(client_for, analyst, custodian, settings):
    settings.DEIDWEB_UPLOAD_MAX_BYTES = 2048
    big = b"name,age\n" + b"Someone,42\n" * 1000
    response = client_for(analyst).post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile("big.csv", big)},
    )
    assert response.status_code == 413
    assert response.json()["extra"]["code"] == "too_large"
    assert not Dataset.objects.exists()


def test_good_upload_is_stored_once_as_parquet_with_digests(client_for, analyst, custodian):
    import hashlib

    import polars as pl

    response = client_for(analyst).post(
        reverse("dataset-upload", kwargs={"org": custodian.slug}),
        {
            "file": SimpleUploadedFile("people.csv", b"name;postal\nA;01234\nB;K1A 0B1\n"),
            "name": "People",
        },
    )
    assert response.status_code == 302
    dataset = Dataset.objects.get()
    assert (dataset.name, dataset.rows, dataset.column_count, dataset.delimiter) == (
        "People",
        2,
        2,
        ";",
    )
    assert dataset.sha256 == hashlib.sha256(b"name;postal\nA;01234\nB;K1A 0B1\n").hexdigest()
    assert dataset.original_path == ""  # the organization did not ask to keep originals
    path = Path(settings.MEDIA_ROOT) / dataset.parquet_path
    assert pl.read_parquet(path)["postal"].to_list() == ["01234", "K1A 0B1"]  # exact strings
    assert dataset.profile_job.kind == "profile" and dataset.profile_job.status == "queued"
    assert response["Location"].endswith(f"/datasets/{dataset.id}/")


def test_original_is_kept_when_the_organization_says_so(client_for, analyst, custodian):
    custodian.keep_original_uploads = True
    custodian.save()
    client_for(analyst).post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile("k.csv", GOOD)},
    )
    dataset = Dataset.objects.get()
    assert dataset.original_path.endswith("k.csv")
    assert (Path(settings.MEDIA_ROOT) / dataset.original_path).read_bytes() == GOOD


def test_delete_removes_files(
    client_for, analyst, custodian, existing, django_capture_on_commit_callbacks
):
    path = Path(settings.MEDIA_ROOT) / existing.parquet_path
    assert path.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(analyst).delete(f"/api/v1/datasets/{existing.id}/")
    assert response.status_code == 204
    assert not path.exists()
    assert not Dataset.objects.exists()


def test_the_limits_come_from_the_settings(client_for, analyst, custodian, existing, settings):
    import io

    import xlsxwriter

    def post(filename, content):
        return client_for(analyst).post(
            "/api/v1/datasets/",
            {"organization": custodian.slug, "file": SimpleUploadedFile(filename, content)},
        )

    wide = (",".join(f"c{i}" for i in range(10_000)) + "\n" + "1," * 9_999 + "1\n").encode()
    response = post("wide.csv", wide)
    assert response.status_code == 400
    assert response.json()["extra"]["code"] == "too_many_columns"
    assert "10,000 columns; the limit is 2,000" in response.json()["message"]

    settings.DEIDWEB_MAX_COLUMNS = 2
    response = post("three.csv", GOOD)
    assert "3 columns; the limit is 2" in response.json()["message"]

    settings.DEIDWEB_MAX_COLUMNS = 2000
    settings.DEIDWEB_MAX_EXPANDED_BYTES = 1024
    buffer = io.BytesIO()
    with xlsxwriter.Workbook(buffer) as workbook:
        workbook.add_worksheet().write_row(0, 0, ["name", "age"])
    response = post("book.xlsx", buffer.getvalue())
    assert response.json()["extra"]["code"] == "expands_too_much"
    assert "the limit is 1 KB" in response.json()["message"]
    assert Dataset.objects.count() == 1


LATIN = "nom,ville\nRené,Montréal\nÉlise,Québec\n".encode("latin-1")


@pytest.mark.parametrize(
    ("encoding", "content", "fragment"),
    [
        ("rot13", GOOD, "'rot13' is not a character encoding"),
        ("utf-32", GOOD, "not utf-32"),
        ("utf-16", LATIN, "not utf-16"),
    ],
)
def test_api_refuses_an_encoding_that_cannot_read_the_file(
    client_for, analyst, custodian, encoding, content, fragment
):
    response = client_for(analyst).post(
        "/api/v1/datasets/",
        {
            "organization": custodian.slug,
            "file": SimpleUploadedFile("people.csv", content),
            "encoding": encoding,
        },
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["extra"]["code"] in ("unknown_encoding", "encoding")
    assert fragment in body["message"].lower()
    assert not Dataset.objects.exists()


def test_page_refuses_its_own_utf16_choice_on_a_latin1_file(client_for, analyst, custodian):
    url = reverse("dataset-upload", kwargs={"org": custodian.slug})
    response = client_for(analyst).post(
        url, {"file": SimpleUploadedFile("people.csv", LATIN), "encoding": "utf-16"}
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "not UTF-16" in text
    assert 'role="alert"' in text
    assert not Dataset.objects.exists()


def test_a_utf16_file_with_its_byte_order_mark_is_read(client_for, analyst, custodian):
    content = "nom,ville\nRené,Montréal\nÉlise,Québec\n".encode("utf-16")
    response = client_for(analyst).post(
        "/api/v1/datasets/",
        {
            "organization": custodian.slug,
            "file": SimpleUploadedFile("people.csv", content),
            "encoding": "utf-16",
        },
    )
    assert response.status_code == 201, response.content
    assert (response.json()["rows"], response.json()["encoding"]) == (2, "utf-16")
