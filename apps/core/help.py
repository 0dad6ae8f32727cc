"""The help pages, in the order of the method. Each page template is ``help/<slug>.html``."""

HELP_TOPICS: dict[str, str] = {
    "start": "Getting started",
    "upload": "Uploading a data set",
    "profile": "Reading a data set's profile",
    "classification": "Step 2: classifying variables",
    "jobs": "Background jobs",
    "datasets": "Data sets and where they are kept",
    "api": "The REST API",
}
