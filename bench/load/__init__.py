"""The load test (bench/bench_load.py, its command line): the seeded accounts and data
(:mod:`.seed`), the API calls that drive the assessments (:mod:`.api`), the searches and
applies run under the load (:mod:`.jobs`), the run's database (:mod:`.database`) and
docs/bench/load.md (:mod:`.report`)."""
