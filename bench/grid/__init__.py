"""ARX's k-anonymity grid under ARX's protocol (bench/bench_grid.py, its command line):
what is measured (:mod:`.data`), the conversation with ARX and deidweb's worker
(:mod:`.harness`) and docs/bench/grid.md (:mod:`.report`)."""
