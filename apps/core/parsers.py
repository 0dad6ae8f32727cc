"""The API's JSON parser: a NUL character anywhere in a body is refused (400, naming where).

PostgreSQL stores neither a NUL in text nor one in ``jsonb`` (``\\u0000``), and free JSON
settings (a hierarchy's ``params``, dictionary keys) reach the database without passing a
text field's own NUL check; so the whole parsed body is walked once, keys and values."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, parsers


def nul_at(value: Any, where: str = "") -> str | None:
    """The path of the first text (key or value) holding a NUL character, or None."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return path or "body"
        elif isinstance(item, dict):
            for key, inner in item.items():
                name = f"{path}.{key}" if path else str(key)
                if "\x00" in str(key):
                    return name.replace("\x00", "")
                stack.append((inner, name))
        elif isinstance(item, list):
            stack.extend((inner, f"{path}[{i}]") for i, inner in enumerate(item))
    return None


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        where = nul_at(data)
        if where is not None:
            raise exceptions.ParseError(
                f"'{where}' contains a NUL character, which no field accepts."
            )
        return data
