"""The longitudinal benchmark (bench/bench_longitudinal.py, its command line): the seeded
person and visit tables and the problem built from them (:mod:`.data`), the cases each run
in a worker process (:mod:`.measure`) and docs/bench/longitudinal.md (:mod:`.report`)."""
