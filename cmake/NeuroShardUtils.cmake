# Helpers shared by every NeuroShard CMakeLists.txt.

# neuroshard_unittest(<name> SOURCES... LIBS...)
# A GoogleTest executable registered with CTest, one CTest test per TEST().
function(neuroshard_unittest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/unittests)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS unit ENVIRONMENT "${NEUROSHARD_TEST_ENVIRONMENT}")
  add_dependencies(neuroshard-unittests ${name})
endfunction()

# neuroshard_link_neural_cost_model(<target>)
# Links the cost models into a tool: with LibTorch, the neural model too, and
# NEUROSHARD_HAS_TORCH so that the tool registers its loader.
function(neuroshard_link_neural_cost_model target)
  target_link_libraries(${target} PRIVATE NeuroShardAvailableCostModels)
endfunction()
