from django.db import migrations, models

MESSAGE = (
    "The job stopped on an unexpected error. Run it again; if it fails again, tell your "
    "administrator, giving this reference: job {id}."
)


def move_tracebacks(apps, schema_editor):  # type: ignore[no-untyped-def]
    """Jobs that failed on a bug stored the traceback as their error, shown to members."""
    Job = apps.get_model("jobs", "Job")
    failed = Job.objects.filter(status="failed", error__contains="Traceback (most recent call")
    for job in failed.iterator():
        job.error_detail = job.error
        job.error = MESSAGE.format(id=job.id)
        job.save(update_fields=["error", "error_detail"])


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="error_detail",
            field=models.TextField(blank=True),
        ),
        migrations.RunPython(move_tracebacks, migrations.RunPython.noop),
    ]
