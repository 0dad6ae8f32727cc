from django.apps import AppConfig
from django.contrib.auth import get_user_model
from django.db.models.signals import pre_save

from apps.accounts.usernames import guard_username, validate_username


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"

    def ready(self) -> None:
        # lazy: AppConfig.ready(); importing the schema module registers the API key's OpenAPI scheme
        from apps.accounts import schema  # noqa: F401

        # Every path that creates or renames a user: forms and createsuperuser validate the
        # field, every other save is guarded (apps.accounts.usernames).
        user_model = get_user_model()
        field = user_model._meta.get_field("username")
        if validate_username not in field.validators:
            field.validators.append(validate_username)
        pre_save.connect(guard_username, sender=user_model, dispatch_uid="deidweb-usernames")
