from django.contrib import admin

from apps.accounts.models import Membership, Organization


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]  # not generic at runtime
    model = Membership
    extra = 0


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at runtime
    list_display = ("name", "slug", "keep_original_uploads", "require_two_approvals")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]
