# algorithms_smoke_tests: every tree, direct, bruck, pairwise and dissemination algorithm, chosen
# explicitly, at P = 2, 3, 4, 5, 8 (ranks as threads), against references computed in the test;
# plus cost-model checks against docs/algorithms.md.
add_executable(algorithms_smoke_tests
  ${CMAKE_CURRENT_LIST_DIR}/algorithms_smoke_test.cc
  ${PROJECT_SOURCE_DIR}/test/transport/harness.cc
)
target_link_libraries(algorithms_smoke_tests PRIVATE
  gloo_lite_test_support gloo_lite_core GTest::gtest_main)
gtest_discover_tests(algorithms_smoke_tests DISCOVERY_TIMEOUT 30
                     PROPERTIES TIMEOUT 300 LABELS collectives)
