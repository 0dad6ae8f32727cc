import pytest

from tests.reviews.conftest import (  # the review flow's fixtures, for the anchor tests
    assessment,
    classified,
    complete_assessment,
    ready_dataset,
)


@pytest.fixture
def client_for(client_for):  # type: ignore[no-untyped-def]
    """Signed-in clients whose sign-in is not recorded: these tests count the events they
    record themselves. (Sign-ins are audited; test_events_recorded.py checks that.)"""
    from django.contrib.auth.signals import user_logged_in

    from apps.audit.signals import on_login

    def make(user):  # type: ignore[no-untyped-def]
        user_logged_in.disconnect(on_login, dispatch_uid="deidweb-audit-login")
        try:
            return client_for(user)
        finally:
            user_logged_in.connect(on_login, dispatch_uid="deidweb-audit-login")

    return make
