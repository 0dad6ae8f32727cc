from tests.assessments.conftest import assessment, classified, ready_dataset  # noqa: F401
