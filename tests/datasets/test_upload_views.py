"""Bad input through the page and the API: a clear message, and nothing saved is lost."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.datasets.models import Dataset
from apps.jobs.claiming import job_execute
from apps.jobs.models import Job
from tests.conftest import read_now

GOOD = b"name,age,sex\nAlice,34,F\nBob,51,M\n"

# Refused in the request: what needs no reading of the content.
REFUSED = [
    ("empty.csv", b"", "empty_file", "empty"),
    ("fake.xlsx", b"name,age\nA,1\n", "format_mismatch", "xlsx"),
    ("fake.parquet", b"name,age\nA,1\n", "format_mismatch", "parquet"),
    ("notes.docx", b"PK\x03\x04whatever", "unsupported_format", "docx"),
]
# Found by the worker reading the file: the same messages, on the job and the data set.
BAD = [
    ("header_only.csv", b"name,age\n", "no_data_rows", "no data rows"),
    ("ragged.csv", b"a,b,c\n1,2,3\n4,5\n6,7,8\n", "ragged_rows", "line 3"),
    ("dupes.csv", b"age,sex,age\n1,F,2\n", "duplicate_columns", "age"),
    ("blank_name.csv", b"age,,sex\n1,2,F\n", "empty_column_name", "2"),
    ("latin.csv", "nom,ville\nRené,Montréal\n".encode("cp1252"), "encoding", "line 2"),
]


@pytest.fixture
def existing(custodian, analyst):
    from apps.datasets.services import dataset_upload

    return read_now(
        dataset_upload(
            organization=custodian, user=analyst, upload=SimpleUploadedFile("keep.csv", GOOD)
        )
    )


def stored_files() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("filename", "content", "code", "fragment"), REFUSED)
def test_api_refuses_what_is_not_a_data_file_at_once_and_keeps_what_was_saved(
    client_for, analyst, custodian, existing, filename, content, code, fragment
):
    before_files = stored_files()
    before = Dataset.objects.count(), Job.objects.count()
    response = client_for(analyst).post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile(filename, content)},
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


@pytest.mark.parametrize(("filename", "content", "code", "fragment"), BAD)
def test_the_worker_reports_bad_content_with_a_clear_message_and_keeps_what_was_saved(
    client_for,
    analyst,
    custodian,
    existing,
    filename,
    content,
    code,
    fragment,
    django_capture_on_commit_callbacks,
):
    before_files = stored_files()
    kwargs = {}
    if filename == "latin.csv":
        kwargs["encoding"] = "utf-8"  # declared wrongly: the bytes are Windows-1252
    client = client_for(analyst)
    response = client.post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile(filename, content), **kwargs},
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["rows"]) == ("converting", 0)
    job_execute(job_id=body["profile_job"])  # as the worker does

    job = client.get(f"/api/v1/jobs/{body['profile_job']}/").json()
    assert job["status"] == "failed"
    details = job["result"]["error"]
    assert (details["code"], details["file"]) == (code, filename)
    assert fragment.lower() in (job["error"] + " " + details["where"]).lower()
    dataset = client.get(f"/api/v1/datasets/{body['id']}/").json()
    assert dataset["status"] == "failed"
    page = client.get(
        reverse("dataset-detail", kwargs={"org": custodian.slug, "dataset_id": body["id"]})
    ).content.decode()
    assert "The file could not be read:" in page
    existing.refresh_from_db()
    assert existing.rows == 2
    # Deleting the failed data set removes its upload: storage is as it was.
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/api/v1/datasets/{body['id']}/").status_code == 204
    assert stored_files() == before_files


def test_page_shows_the_message_next_to_the_file_field(client_for, analyst, custodian):
    url = reverse("dataset-upload", kwargs={"org": custodian.slug})
    response = client_for(analyst).post(
        url, {"file": SimpleUploadedFile("table.xlsx", b"a,b\n1,2\n3\n")}
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "named like an Excel workbook (.xlsx), but its content is plain text" in text
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


def test_good_upload_is_stored_then_read_by_the_worker_into_parquet_with_digests(
    client_for, analyst, custodian
):
    import hashlib

    import polars as pl

    content = b"name;postal\nA;01234\nB;K1A 0B1\n"
    response = client_for(analyst).post(
        reverse("dataset-upload", kwargs={"org": custodian.slug}),
        {"file": SimpleUploadedFile("people.csv", content), "name": "People"},
    )
    assert response.status_code == 302
    assert response["Location"].endswith(f"/datasets/{Dataset.objects.get().id}/")
    dataset = Dataset.objects.get()
    # The request only stored the file as it came, and queued the job that reads it.
    assert (dataset.status, dataset.parquet_path, dataset.source_format) == (
        "converting",
        "",
        "csv",
    )
    assert (Path(settings.MEDIA_ROOT) / dataset.original_path).read_bytes() == content
    assert dataset.profile_job.kind == "ingest" and dataset.profile_job.status == "queued"

    dataset = read_now(dataset)
    assert (dataset.name, dataset.rows, dataset.column_count, dataset.delimiter) == (
        "People",
        2,
        2,
        ";",
    )
    assert dataset.sha256 == hashlib.sha256(content).hexdigest()
    assert dataset.original_path == ""  # the organization did not ask to keep originals
    folder = (
        Path(settings.MEDIA_ROOT) / f"organizations/{dataset.organization_id}/datasets/{dataset.id}"
    )
    assert not list(folder.rglob("people.csv"))  # the uploaded file is gone once read
    path = Path(settings.MEDIA_ROOT) / dataset.parquet_path
    assert pl.read_parquet(path)["postal"].to_list() == ["01234", "K1A 0B1"]  # exact strings


def test_original_is_kept_when_the_organization_says_so(client_for, analyst, custodian):
    custodian.keep_original_uploads = True
    custodian.save()
    client_for(analyst).post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile("k.csv", GOOD)},
    )
    dataset = read_now(Dataset.objects.get())
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

    def error_of(filename, content):
        response = client_for(analyst).post(
            "/api/v1/datasets/",
            {"organization": custodian.slug, "file": SimpleUploadedFile(filename, content)},
        )
        assert response.status_code == 201, response.content
        job_execute(job_id=response.json()["profile_job"])
        job = Job.objects.get(id=response.json()["profile_job"])
        return job.result["error"]["code"], job.error

    wide = (",".join(f"c{i}" for i in range(10_000)) + "\n" + "1," * 9_999 + "1\n").encode()
    code, message = error_of("wide.csv", wide)
    assert code == "too_many_columns"
    assert "10,000 columns; the limit is 2,000" in message

    settings.DEIDWEB_MAX_COLUMNS = 2
    assert "3 columns; the limit is 2" in error_of("three.csv", GOOD)[1]

    settings.DEIDWEB_MAX_COLUMNS = 2000
    settings.DEIDWEB_MAX_EXPANDED_BYTES = 1024
    buffer = io.BytesIO()
    with xlsxwriter.Workbook(buffer) as workbook:
        workbook.add_worksheet().write_row(0, 0, ["name", "age"])
    code, message = error_of("book.xlsx", buffer.getvalue())
    assert code == "expands_too_much" and "the limit is 1 KB" in message
    assert Dataset.objects.filter(status="ready").count() == 1


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
    dataset = read_now(Dataset.objects.get(id=response.json()["id"]))
    assert (dataset.rows, dataset.encoding) == (2, "utf-16")
