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
  ${CMAKE_CURRENT_LIST_DIR}/bench_device.cc
)
target_compile_definitions(gloo_lite_bench PRIVATE GLOO_LITE_BENCH_VERSION="${PROJECT_VERSION}")
# gloo_lite::cuda for -m cuda / host-stand-in (always built: without CUDA its CUDA layer
# reports Unavailable and the host stand-in still runs).
target_link_libraries(gloo_lite_bench PRIVATE gloo_lite::gloo_lite gloo_lite::cuda)
install(TARGETS gloo_lite_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
