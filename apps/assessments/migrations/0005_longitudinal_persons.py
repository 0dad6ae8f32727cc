"""Several rows per person (#25): the person key, the quasi-identifiers' levels and the
adversary power are stored on the assessment."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("assessments", "0004_assessment_secrets_wrapped_key"),
    ]

    operations = [
        migrations.AddField(
            model_name="assessment",
            name="person_key",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="assessment",
            name="person_levels",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="assessment",
            name="adversary_power",
            field=models.CharField(default="3", max_length=3),
        ),
    ]
