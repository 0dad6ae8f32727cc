from django.http import HttpRequest

from apps.accounts.selectors import organizations_for


def organizations(request: HttpRequest) -> dict[str, object]:
    """Navigation by organization: the user's organizations and the one being viewed."""
    if not request.user.is_authenticated:
        return {}
    return {
        "user_organizations": list(organizations_for(user=request.user)),
        "membership": getattr(request, "membership", None),
        "current_organization": getattr(getattr(request, "membership", None), "organization", None),
    }
