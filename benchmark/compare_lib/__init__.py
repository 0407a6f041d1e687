"""benchmark/compare: gloo_lite against the anchors (Debian's Gloo over TCP, Open MPI over TCP
and shared memory), interleaved in one run. See docs/benchmarking.md.

Modules:
  model   - sizes, records, parsing of the anchors' CSV and gloo_lite_bench's JSON, best-of-passes
  report  - the issue-4 targets, ratios, the text/markdown table and the summary
  runner  - scratch copy and build of the anchors, quiet-machine waits, launching every case
  plot    - busbw and latency against size with matplotlib (also runnable as a module)
  selftest- fixture-driven tests (no runs, no anchors needed): `compare --self-test`
  side_by_side - what python_compare.py and torch_compare.py share: options, launch, tables
"""
