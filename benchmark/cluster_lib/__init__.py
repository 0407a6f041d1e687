"""benchmark/cluster: collectives across simulated hosts (network namespaces, shaped veths).
See docs/benchmarking.md.

Modules:
  topology - --hosts shapes (4x2, 3,3,2), link rates, each collective's link limit, the table
  netns    - the namespaces through test/netns/netns_lib.sh (setup, shaping, teardown, checks)
  cli      - options, the runs (gloo_lite per rank in its namespace, the Gloo anchor, Open MPI),
             table, JSON and plot (compare_lib's parsers, anchor build and plot)
  check    - --check's verdicts (values right, auto within PCT% of the fastest forced
             algorithm), what the CI test test/netns/cluster_test.sh rests on
  selftest - fixture tests, no root and no namespaces: `cluster --self-test`
"""
