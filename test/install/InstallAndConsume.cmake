# Installs the build into a fresh prefix, builds test/install/consumer against
# it with find_package(NeuroShard), and checks that the consumer and the
# installed tools plan with the shipped default cost model found under the
# prefix, never through the source or build tree.
#
# cmake -DBUILD_DIR=... -DWORK=... -DSOURCE_DIR=... -DEXPECT_MODEL=...
#       -DGENERATOR=... -P InstallAndConsume.cmake

include(${CMAKE_CURRENT_LIST_DIR}/InstallTestSupport.cmake)

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file include/neuroshard/Dialect/NeuroShard/IR/NeuroShardOps.td
             include/neuroshard/Dialect/NeuroShard/IR/NeuroShardOps.h.inc
             lib/cmake/NeuroShard/NeuroShardConfig.cmake
             share/neuroshard/models/${EXPECT_MODEL}/meta.json
             share/doc/neuroshard/README.md
             share/doc/neuroshard/docs/planner.md
             bin/neuroshard-opt)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()

# The consumer: configured, built and run outside both trees, with the
# prefix and the LLVM the build used (the package finds LLVM and MLIR by
# name) on its CMAKE_PREFIX_PATH.
load_cache(${BUILD_DIR} READ_WITH_PREFIX build_ LLVM_DIR)
get_filename_component(llvm_prefix "${build_LLVM_DIR}/../../.." ABSOLUTE)
run(${CMAKE_COMMAND} -E env "CMAKE_PREFIX_PATH=${prefix}:${llvm_prefix}"
    ${CMAKE_COMMAND} -G ${GENERATOR} -S ${SOURCE_DIR}/test/install/consumer
    -B ${WORK}/consumer)
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
run(${WORK}/consumer/consumer ${SOURCE_DIR}/examples/dlrm.mlir)
expect("cost model: ${EXPECT_MODEL}" "the consumer's plan")
message(STATUS "consumer:\n${out}")

# The installed tool finds the installed bundle.
run(${prefix}/bin/neuroshard-opt ${SOURCE_DIR}/examples/dlrm.mlir
    --neuroshard-shard=plan-table=- -o ${WORK}/sharded.mlir)
expect("cost model: neural cost model '${EXPECT_MODEL}'" "the installed tool")

# The installed tools' --help names the installed documentation.
foreach(tool_page neuroshard-plan:planner.md neuroshard-opt:passes.md)
  string(REPLACE ":" ";" tool_page "${tool_page}")
  list(GET tool_page 0 tool)
  list(GET tool_page 1 page)
  run(${prefix}/bin/${tool} --help)
  expect("DOCUMENTATION:\n\n  ${prefix}/share/doc/neuroshard/docs/${page}\n"
         "${tool} --help")
endforeach()

# NEUROSHARD_MODELS_DIR, when set, is the only place searched.
file(MAKE_DIRECTORY ${WORK}/no-models)
execute_process(COMMAND ${CMAKE_COMMAND} -E env
                NEUROSHARD_MODELS_DIR=${WORK}/no-models
                ${prefix}/bin/neuroshard-opt ${SOURCE_DIR}/examples/dlrm.mlir
                --neuroshard-shard -o /dev/null
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "planning without the bundle succeeded")
endif()
expect("cost model 'default': the shipped bundle '${EXPECT_MODEL}' is in none of: ${WORK}/no-models;"
       "the error without the bundle")
message(STATUS "install, consumer and bundle lookup: ok")
