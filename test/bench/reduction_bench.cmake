# gloo_lite_reduction_bench: reduction kernel throughput (Google Benchmark), built where the
# library is found (Debian: libbenchmark-dev). Included from benchmark/CMakeLists.txt (the
# source is here, with the tests: it includes the internal reduction_kernels.h).
find_package(benchmark QUIET)
if(benchmark_FOUND)
  add_executable(gloo_lite_reduction_bench ${CMAKE_CURRENT_LIST_DIR}/reduction_bench.cc)
  target_link_libraries(gloo_lite_reduction_bench PRIVATE gloo_lite_core benchmark::benchmark)
else()
  message(STATUS "Google Benchmark not found: gloo_lite_reduction_bench is not built")
endif()
