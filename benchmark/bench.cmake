# gloo_lite_bench: nccl-tests-style collective benchmark (gloo_lite_run -n 4 -- gloo_lite_bench).
# Included from benchmark/CMakeLists.txt.
add_executable(gloo_lite_bench
  ${CMAKE_CURRENT_LIST_DIR}/gloo_lite_bench.cc
  ${CMAKE_CURRENT_LIST_DIR}/bench_options.cc
  ${CMAKE_CURRENT_LIST_DIR}/bench_values.cc
  ${CMAKE_CURRENT_LIST_DIR}/bench_collective.cc
  ${CMAKE_CURRENT_LIST_DIR}/bench_sweep.cc
  ${CMAKE_CURRENT_LIST_DIR}/bench_report.cc
  ${CMAKE_CURRENT_LIST_DIR}/bench_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/bench_compute.cc
  ${CMAKE_CURRENT_LIST_DIR}/bench_overlap.cc
)
target_compile_definitions(gloo_lite_bench PRIVATE GLOO_LITE_BENCH_VERSION="${PROJECT_VERSION}")
target_link_libraries(gloo_lite_bench PRIVATE gloo_lite::gloo_lite)
install(TARGETS gloo_lite_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
