"""The OpenAPI schema says every answer an operation can give, errors included.

Every error leaves the API as ``{"message": ..., "extra": {...}}`` (``apps.core.api``).
Rather than repeat the same four or five error responses on each of some sixty operations,
this postprocessing hook adds them by rule, from what the operation takes:

- 401 and 403 everywhere: not signed in; signed in, but the role does not allow it.
- 404 where a path names an object, or the body names an organization or a data set:
  another organization's objects are not found either (no hint that they exist). A filter
  that can answer 404 declares it itself.
- 400 where the operation takes input (query, body) or runs a rule of the method (every
  action beyond reading one object): ``extra.fields`` names each bad field.
- 409 where an assessment, a job or a data set is changed: its state does not allow it yet
  (a step not done) or any more (a submitted or decided version is frozen, a job finished, a
  data set with assessments).
- 429 everywhere once the API is throttled (``DEFAULT_THROTTLE_CLASSES``).

An operation's own ``extend_schema(responses=...)`` wins over the rules: a rule only fills in
what the view left out. ``tests/core/test_api_contract.py`` keeps the rules honest.
"""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.settings import api_settings

ORGANIZATION_FILTER = OpenApiParameter(
    "organization", OpenApiTypes.STR, description="Only this organization (its short name)."
)

ERROR_COMPONENT = "Error"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error of the API: a sentence for people, details for programs.",
    "properties": {
        "message": {"type": "string", "description": "What went wrong, in words."},
        "extra": {
            "type": "object",
            "additionalProperties": {},
            "description": "Details: `fields` (field → messages) for bad input, `column`, `code`…",
        },
    },
    "required": ["message", "extra"],
}

DESCRIPTIONS = {
    "400": "Bad input or a rule of the method not met: the message says which "
    "(`extra.fields` names each bad field).",
    "401": "Not signed in, or the credentials are not valid.",
    "403": "Your role in the organization does not allow it (or not signed in).",
    "404": "No such object in your organizations (another organization's are not found either).",
    "409": "The state of the object does not allow it yet (a step not done) or any more (a "
    "submitted or decided version is frozen, a job finished, a data set with assessments).",
    "413": "The file is larger than the upload limit; nothing was saved.",
    "429": "Too many requests: wait as long as `Retry-After` says.",
}

_UNSAFE = {"post", "put", "patch", "delete"}
_METHODS = _UNSAFE | {"get"}
_PLAIN_READ = re.compile(r"^/api/v1/[a-z-]+/\{(id|slug)\}/$")
_FROZEN = re.compile(r"^/api/v1/(assessments|jobs|datasets)/\{id\}/")
_REFERENCES = {"organization", "dataset"}


def error_response(status: str, description: str | None = None) -> dict[str, Any]:
    return {
        "description": description or DESCRIPTIONS[status],
        "content": {
            "application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}}
        },
    }


def _body_fields(operation: dict[str, Any], schemas: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for media in operation.get("requestBody", {}).get("content", {}).values():
        schema = media.get("schema", {})
        if "$ref" in schema:
            schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
        names |= set(schema.get("properties", {}))
    return names


def statuses_for(
    path: str, method: str, operation: dict[str, Any], schemas: dict[str, Any]
) -> list[str]:
    """The error statuses the rules give one operation."""
    parameters = operation.get("parameters", [])
    in_path = any(p.get("in") == "path" for p in parameters)
    query = {p["name"] for p in parameters if p.get("in") == "query"}
    body = _body_fields(operation, schemas)
    statuses = ["401", "403"]
    plain_read = method == "get" and _PLAIN_READ.match(path) and not query
    if not plain_read:
        statuses.append("400")
    if in_path or body & _REFERENCES:
        statuses.append("404")
    if _FROZEN.match(path) and method in _UNSAFE:
        statuses.append("409")
    if api_settings.DEFAULT_THROTTLE_CLASSES:
        statuses.append("429")
    return sorted(statuses)


def document_errors(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas[ERROR_COMPONENT] = ERROR_SCHEMA
    for path, methods in result.get("paths", {}).items():
        for method, operation in methods.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            for status in statuses_for(path, method, operation, schemas):
                declared = responses.get(status)
                if declared is None:
                    responses[status] = error_response(status)
                elif "content" not in declared:  # a description only: the body is an Error
                    responses[status] = error_response(status, declared.get("description"))
    return result
