"""API access: objects are looked up only among the caller's organizations (404 otherwise)."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from apps.accounts.selectors import membership_get


class OrganizationRole(BasePermission):
    """Reads for any member; writes for analysts and administrators."""

    message = "Only analysts and administrators can change this."

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        membership = membership_get(user=request.user, organization=obj.organization)
        if request.method in SAFE_METHODS:
            return True
        return membership.can_edit


class OrganizationMember(BasePermission):
    """Any member of the object's organization; the service decides what the role allows
    (a review action: reviewers decide and comment, analysts submit and revise)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        membership_get(user=request.user, organization=obj.organization)  # 404 for outsiders
        return True
