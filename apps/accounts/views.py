from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from apps.accounts.lockout import sign_in_policy
from apps.accounts.models import ApiToken
from apps.accounts.selectors import api_tokens_of, organizations_for
from apps.accounts.services import api_token_create, api_token_revoke, user_set_password
from apps.core.errors import ApplicationError


class SignInView(auth_views.LoginView):
    """Django's sign-in, announcing the lockout policy (django-axes enforces it)."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **sign_in_policy()}


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's form (old password, new one twice, the site's validators); the change goes
    through the service, so it is audited, and the user stays signed in here only."""

    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("account")

    def form_valid(self, form: PasswordChangeForm) -> HttpResponse:
        user_set_password(user=form.user, password=form.cleaned_data["new_password1"])
        update_session_auth_hash(self.request, form.user)  # other sessions are signed out
        messages.success(self.request, "Your password is changed.")
        return redirect(self.get_success_url())


@login_required
def home(request: HttpRequest) -> HttpResponse:
    organizations = list(organizations_for(user=request.user))
    if len(organizations) == 1:
        return redirect("org-home", org=organizations[0].slug)
    return render(
        request, "accounts/home.html", {"organizations": organizations, "help_topic": "start"}
    )


@never_cache
@login_required
def account(request: HttpRequest) -> HttpResponse:
    """Password and API keys. A new key is shown in the answer to its POST, once: it is not
    stored anywhere it could be shown from again (nor put in the session)."""
    context: dict[str, Any] = {"help_topic": "api"}
    status = 200
    if request.method == "POST":
        try:
            token, key = api_token_create(user=request.user, name=request.POST.get("name", ""))
        except ApplicationError as error:
            context["error"] = error.message
            status = 400
        else:
            context.update(new_token=token, new_key=key)
            status = 201
    context.update(
        tokens=api_tokens_of(user=request.user),  # type: ignore[arg-type]
        idle_hours=settings.DEIDWEB_SESSION_IDLE_HOURS,
    )
    return render(request, "accounts/account.html", context, status=status)


@require_POST
@login_required
def account_token_revoke(request: HttpRequest, token_id: str) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    if api_token_revoke(token=token, actor=request.user):
        messages.success(request, f"The key “{token.name}” ({token.prefix}…) is revoked.")
    return redirect("account")
