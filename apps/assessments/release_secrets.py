"""The keys and linking tables of a release (``MaskingSecrets``), kept apart from the
released files: sealed before they reach any disk and stored beside the release, and
opened again only for an administrator's download."""

from __future__ import annotations

import base64
import io
import json
import logging
from pathlib import Path
from typing import Any

from apps.assessments.models import SECRETS_BUNDLE_PURPOSE, Assessment
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.datasets import storage

logger = logging.getLogger(__name__)


def release_secrets_store(
    assessment: Assessment, secrets: Any, folder: str, scratch: Path
) -> tuple[str, str]:
    """Seal a release's keys and linking tables (``MaskingSecrets``) and store them in
    ``folder``: (stored name, wrapped key), or ("", "") when there are none."""
    if not (secrets.keys or secrets.linking_tables):
        return "", ""
    payload: dict[str, Any] = {
        "assessment": str(assessment.id),
        "keys": {c: base64.b64encode(k_).decode() for c, k_ in secrets.keys.items()},
        "linking_tables": {},
    }
    for column, table in secrets.linking_tables.items():
        buffer = io.StringIO()
        table.write_csv(buffer)
        payload["linking_tables"][column] = buffer.getvalue()
    # Sealed before it reaches any disk: the scratch folder is private, but the plaintext
    # keys would outlive it in a backup of /tmp or of swap.
    wrapped_key, sealed = crypto.seal_bytes(
        json.dumps(payload).encode("utf-8"), purpose=SECRETS_BUNDLE_PURPOSE
    )
    bundle = scratch / "secrets.sealed"
    bundle.write_bytes(sealed)
    return storage.store(bundle, f"{folder}/keys-and-linking-tables.sealed"), wrapped_key


def release_secrets_read(*, assessment: Assessment) -> bytes:
    """The keys and linking tables of a release (JSON), opened for an administrator's
    download. The caller checks the role and records the download."""
    from django.core.files.storage import default_storage

    if not assessment.secrets_path:
        raise ApplicationError("This release has no keys or linking tables.", status=404)
    try:
        with default_storage.open(assessment.secrets_path, "rb") as handle:
            sealed = handle.read()
        return crypto.open_bytes(
            assessment.secrets_wrapped_key, sealed, purpose=SECRETS_BUNDLE_PURPOSE
        )
    except (OSError, crypto.SecretUnreadable):
        logger.exception("the keys of assessment %s cannot be opened", assessment.id)
        raise ApplicationError(
            "The keys and linking tables cannot be read from storage (missing, damaged, or "
            "sealed with a master key this server does not have).",
            status=409,
        ) from None
