from tests.reviews.conftest import (  # the review flow's fixtures, for the page scans
    assessment,
    classified,
    ready_dataset,
)
