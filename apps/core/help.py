"""The help pages, in the order of the method. Each page template is ``help/<slug>.html``."""

HELP_TOPICS: dict[str, str] = {
    "start": "Getting started",
    "upload": "Uploading a data set",
    "profile": "Reading a data set's profile",
    "classification": "Step 2: classifying variables",
    "step-release": "Step 1: release model",
    "step-threshold": "Step 3: risk threshold",
    "step-data-risk": "Step 4: data risk",
    "step-context-risk": "Step 5: context risk",
    "step-overall-risk": "Step 6: overall risk",
    "step-deidentify": "Step 7: de-identify",
    "step-utility": "Step 8: utility",
    "assessments": "Assessments",
    "jobs": "Background jobs",
    "datasets": "Data sets and where they are kept",
    "api": "The REST API",
    "reviews": "Review and release",
    "audit": "The audit trail",
}
