"""Lists that must agree are read from one source (issue 24): the fields a version freezes
and a revision copies, Step 1's fields, and every field of an assessment placed in one or
the other on purpose."""

from apps.assessments.forms import ReleaseForm
from apps.assessments.models import RELEASE_FIELDS, Assessment
from apps.assessments.serializers_release import ReleaseSerializer, ReleaseStateSerializer
from apps.assessments.threat_model import STEP1_FIELDS
from apps.reviews.decisions import _COPIED
from apps.reviews.snapshot import FROZEN_FIELDS

# What a version's frozen record leaves out on purpose: what identifies the row and the
# review's own doing (status, dates, jobs), and the key of the sealed secrets, which a
# revision copies but no decision shows.
LIVE = {
    "id",
    "organization",
    "dataset",
    "status",
    "previous",
    "submitted_at",
    "decided_at",
    "created_by",
    "created_at",
    "updated_at",
    "risk_job",
    "search_job",
    "apply_job",
    "secrets_wrapped_key",
}


def test_every_field_of_an_assessment_is_frozen_or_live_on_purpose():
    # (a link frozen by its id: the pseudonymisation domain)
    fields = {
        f.attname if f.name == "pseudonym_domain" else f.name
        for f in Assessment._meta.concrete_fields
    }
    assert set(FROZEN_FIELDS) <= fields
    assert fields - set(FROZEN_FIELDS) == LIVE


def test_a_revision_copies_the_frozen_fields_but_the_number_with_its_data_and_key():
    copied = set(_COPIED)
    assert copied == (set(FROZEN_FIELDS) - {"version"}) | {"dataset_id", "secrets_wrapped_key"}


def test_step_1_fields_are_one_list_the_page_the_api_and_the_record_read():
    assert len(RELEASE_FIELDS) == 7
    step1 = [*RELEASE_FIELDS, *STEP1_FIELDS]  # (with the threat model's Step 1 part)
    # The page's form also offers the pseudonymisation domain (a link to an organization's
    # domain, set through `domains.assessment_set_pseudonym_domain`, which the API calls at
    # its own …/pseudonym-domain/ action): the one field beyond the list.
    assert list(ReleaseForm.base_fields) == [*step1, "pseudonym_domain"]
    written = [n for n, f in ReleaseSerializer().fields.items() if not f.read_only]
    assert written == step1
    assert list(ReleaseStateSerializer().fields) == [*step1, "effective_release_model"]
    assert set(RELEASE_FIELDS) <= set(FROZEN_FIELDS)
