"""A reviewer's home page and queue: what waits for their decision (with its age), what
they decided; a version they submitted is not theirs to decide."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.assessments.models import Assessment
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit

pytestmark = pytest.mark.django_db


def test_the_queue_of_a_reviewer(complete_assessment, analyst, reviewer, admin_user, client_for):
    assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    # Submitted three days ago.
    Assessment.objects.filter(id=complete_assessment.id).update(
        submitted_at=timezone.now() - dt.timedelta(days=3, hours=1)
    )
    home = reverse("org-home", kwargs={"org": complete_assessment.organization.slug})
    page = client_for(reviewer).get(home).content.decode()
    queue = page.split('data-testid="review-queue"')[1].split("</table>")[0]
    assert complete_assessment.title in queue and ">3 days<" in queue.replace(" </td>", "</td>")
    assert "You have not decided on any release yet." in page

    review_decide(
        assessment=complete_assessment, reviewer=reviewer, decision="approve", reasons="Fine."
    )
    page = client_for(reviewer).get(home).content.decode()
    assert "Nothing is waiting for your decision." in page
    decided = page.split('data-testid="decided-by-me"')[1].split("</ul>")[0]
    assert complete_assessment.title in decided and "Approved" in decided
    # Analysts see no queue; their home page names jobs in words, not internal kinds.
    page = client_for(analyst).get(home).content.decode()
    assert 'data-testid="my-review-queue"' not in page
    assert "Writing the de-identified file (Step 7)" in page and ">assessment-apply<" not in page
