"""UTF-8 check of the text files the engine reads (CSV data files).

The engine reads CSV as UTF-8. Read leniently, every undecodable byte would become
U+FFFD: values that differ in the file ("Montréal", "Montrèal" in Windows-1252) would
become equal, classes would merge and risk would be understated. A file that is not
UTF-8 is therefore refused, naming its line and byte (the web upload converts files
from their detected encoding before they reach the engine).
"""

from __future__ import annotations

from pathlib import Path

from apps.engine.errors import EngineInputError

#: Bytes read at a time when checking that a CSV file is UTF-8.
_UTF8_BLOCK = 1 << 22


def check_utf8(file: Path) -> None:
    """Refuse a file that is not UTF-8, naming its line and byte. Streams the file in
    blocks (C-speed decoding); a character cut by a block's end is completed from the
    next block."""
    line, carry = 1, b""
    with file.open("rb") as handle:
        while True:
            block = handle.read(_UTF8_BLOCK)
            data = carry + block
            if not data:
                return
            try:
                data.decode("utf-8")
                done = len(data)
            except UnicodeDecodeError as exc:
                done = exc.start
                if block and exc.reason == "unexpected end of data":
                    pass  # a character cut by the block's end: completed by the next block
                else:
                    at = line + data.count(b"\n", 0, done)
                    start = data.rfind(b"\n", 0, done) + 1
                    before = data[start:done][-20:].decode("utf-8", errors="replace")
                    raise EngineInputError(
                        f"{file.name} is not UTF-8 text: line {at} has byte "
                        f"0x{data[done]:02X} after {before!r}; save it as UTF-8 (e.g. "
                        "iconv -f windows-1252 -t utf-8)"
                    ) from None
            line += data.count(b"\n", 0, done)
            carry = data[done:]
            if not block:
                return
