"""Every help topic renders and is titled; the Step 5 page carries its key figures."""

import html
import re

import pytest

from apps.core.help import HELP_TOPICS


@pytest.mark.parametrize(("topic", "title"), list(HELP_TOPICS.items()))
def test_every_topic_renders_with_its_title_in_h1(client, topic, title):
    response = client.get(f"/help/{topic}/")
    assert response.status_code == 200
    headings = re.findall(r"<h1[^>]*>(.*?)</h1>", response.content.decode(), flags=re.S)
    assert [html.unescape(h).strip() for h in headings] == [title]


def test_context_risk_page_has_semi_public_t1_and_the_acquaintance_formula(client):
    page = client.get("/help/step-context-risk/").content.decode()
    assert "0.6" in page
    assert "1 − (1 − p)<sup>m</sup>" in page


def test_unknown_topic_is_404(client):
    assert client.get("/help/no-such-topic/").status_code == 404
