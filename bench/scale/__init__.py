"""The product's steps at scale (bench/bench_scale.py, its command line): the data set and
what is measured (:mod:`.data`), the steps each run in a worker process (:mod:`.steps`),
the workers under their watchdog (:mod:`.harness`) and docs/bench/scale.md
(:mod:`.report`)."""
