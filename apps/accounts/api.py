from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import serializers, viewsets

from apps.accounts.models import Membership, Organization
from apps.accounts.selectors import organizations_for


class OrganizationSerializer(serializers.ModelSerializer[Organization]):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Organization
        fields = ["id", "name", "slug", "keep_original_uploads", "require_two_approvals", "role"]

    def get_role(self, obj: Organization) -> str | None:
        membership = Membership.objects.filter(
            organization=obj, user=self.context["request"].user
        ).first()
        return membership.role if membership else None


class OrganizationViewSet(viewsets.ReadOnlyModelViewSet[Organization]):
    """The organizations the caller belongs to, with the caller's role in each."""

    serializer_class = OrganizationSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Organization]:
        return organizations_for(user=self.request.user)
