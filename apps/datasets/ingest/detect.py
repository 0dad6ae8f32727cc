"""The format of an upload: named by its extension, confirmed by its first bytes."""

from __future__ import annotations

import codecs
import zipfile
from pathlib import Path

from apps.datasets.ingest.common import FORMATS_BY_EXTENSION, LABELS, TEXT_FORMATS, IngestError

# SAS7BDAT files open with this 32-byte signature (the ReadStat library checks the same).
_SAS7BDAT_MAGIC = bytes(12) + bytes.fromhex("c2ea8160b31411cfbd92080009c7318c181f1011")
_OLE_MAGIC = bytes.fromhex("d0cf11e0a1b11ae1")
HEAD_BYTES = 1 << 16

# --------------------------------------------------------------------------- format detection


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def _looks_like_text(head: bytes) -> bool:
    if head.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    if b"\x00" in head:
        return False
    controls = sum(1 for byte in head if byte < 32 and byte not in (9, 10, 12, 13)) + head.count(
        b"\x7f"
    )
    return controls <= len(head) // 200


def _identify(path: Path, head: bytes) -> str:
    """What the content is, from its signature: a format key, 'text' or another kind."""
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(_SAS7BDAT_MAGIC):
        return "sas7bdat"
    if head.startswith(b"HEADER RECORD*******LIB"):
        return "xpt"
    if head.startswith(b"$FL2"):
        return "sav"
    if head.startswith(b"$FL3"):
        return "zsav"
    if head.startswith(b"<stata_dta>"):
        return "dta"
    # Stata 104–115: release byte, byte order (1 = big, 2 = little endian), file type 1.
    if len(head) > 4 and 104 <= head[0] <= 115 and head[1] in (1, 2) and head[2] == 1:
        return "dta"
    if b"SPSSPORT" in head[:1024].replace(b"\r", b"").replace(b"\n", b""):
        return "por"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = set(archive.namelist())
        except (zipfile.BadZipFile, OSError):
            return "zip"
        if "xl/workbook.xml" in names:
            return "xlsx"
        return "docx" if "word/document.xml" in names else "zip"
    if head.startswith(_OLE_MAGIC):
        return "ole"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"%PDF-"):
        return "pdf"
    return "text" if _looks_like_text(head) else "binary"


def detect_format(path: Path, filename: str) -> str:
    """The format named by the extension, after checking the content agrees with it."""
    extension = Path(filename).suffix.lower()
    expected = FORMATS_BY_EXTENSION.get(extension)
    if expected is None:
        hint = " Save the sheet as .xlsx or CSV." if extension == ".xls" else ""
        supported = ", ".join(sorted(FORMATS_BY_EXTENSION))
        raise IngestError(
            f"'{filename}': files ending in '{extension or '(no extension)'}' are not "
            f"supported.{hint} Supported: {supported}.",
            code="unsupported_format",
        )
    if path.stat().st_size == 0:
        raise IngestError(f"'{filename}' is empty (0 bytes).", code="empty_file")
    found = _identify(path, read_head(path))
    agrees = (
        found == "text"
        if expected in TEXT_FORMATS
        else found == expected or {found, expected} == {"sav", "zsav"}
    )
    if not agrees:
        raise IngestError(
            f"'{filename}' is named like {LABELS[expected]}, but its content is "
            f"{LABELS[found]}. Check that you chose the right file, or give it the extension "
            "that matches its content.",
            code="format_mismatch",
        )
    return expected
