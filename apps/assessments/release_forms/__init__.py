"""Step 7's other release forms (issue 28): synthetic data and aggregated tables with
complementary suppression, beside de-identified microdata.

- ``config``: the typed release form and its one parser (page and API);
- ``services``: saving it, starting its job, the guards;
- ``jobs``: the two Celery job handlers, writing and freezing the release file like the
  microdata apply job (same fields, same digests, same snapshot);
- ``presenters``: the figures Step 8, the review page and the report show.
"""
