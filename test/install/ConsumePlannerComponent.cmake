# Installs the build into a fresh prefix and checks the package's components:
# the installed CMake files name no system or build path; a consumer of
# `COMPONENTS Planner` (test/install/planner-consumer) configures with
# LibTorch, MPI, the CUDA toolkit and MLIR all made unfindable, links none of
# them, plans, and finds the installed neuroshard-plan as an imported target;
# an unknown component and a component whose dependency is missing are
# refused with messages that name them.
#
# cmake -DBUILD_DIR=... -DWORK=... -DSOURCE_DIR=... -DGENERATOR=...
#       -P ConsumePlannerComponent.cmake

include(${CMAKE_CURRENT_LIST_DIR}/InstallTestSupport.cmake)

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# The package names what it needs by name and its own files relative to
# its prefix: no path of this machine's LLVM, LibTorch or build.
file(GLOB package_files ${prefix}/lib/cmake/NeuroShard/*.cmake)
foreach(file IN LISTS package_files)
  file(READ ${file} text)
  foreach(path "/usr/" "libc10" "${BUILD_DIR}" "${SOURCE_DIR}")
    string(FIND "${text}" "${path}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${file} names '${path}'")
    endif()
  endforeach()
endforeach()
foreach(part Planner Dialect Runtime Execution Tools)
  if(NOT EXISTS ${prefix}/lib/cmake/NeuroShard/NeuroShard${part}Targets.cmake)
    message(FATAL_ERROR "the install has no NeuroShard${part}Targets.cmake")
  endif()
endforeach()

# The consumer finds LLVM where the build found it, and nothing else.
load_cache(${BUILD_DIR} READ_WITH_PREFIX build_ LLVM_DIR)
get_filename_component(llvm_prefix "${build_LLVM_DIR}/../../.." ABSOLUTE)
set(only_llvm
  ${CMAKE_COMMAND} -E env "CMAKE_PREFIX_PATH=${prefix}:${llvm_prefix}"
  ${CMAKE_COMMAND} -G ${GENERATOR}
  -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON
  -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
  -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON)

run(${only_llvm} -S ${SOURCE_DIR}/test/install/planner-consumer
    -B ${WORK}/consumer)
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
run(${WORK}/consumer/planner-consumer)
expect_words("cost model: analytical" "the consumer's plan")
expect_words("shard: user columns [" "the consumer's plan")
message(STATUS "planner-consumer:\n${out}")
string(REGEX MATCH "neuroshard-plan: ([^\n]*)" line "${out}")
set(tool "${CMAKE_MATCH_1}")

# It links LLVM and nothing of the other components' dependencies.
run(ldd ${WORK}/consumer/planner-consumer)
foreach(library libtorch libc10 libmpi libcuda libcudart libnccl libMLIR)
  string(FIND "${out}" "${library}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "planner-consumer links ${library}:\n${out}")
  endif()
endforeach()
expect_words("libLLVM" "the consumer's libraries")

# The imported tool target is the installed tool.
if(NOT tool STREQUAL "${prefix}/bin/neuroshard-plan")
  message(FATAL_ERROR "NeuroShard::neuroshard-plan is '${tool}', expected "
                      "${prefix}/bin/neuroshard-plan")
endif()
run(${tool} --help)
expect_words("USAGE: neuroshard-plan" "neuroshard-plan --help")

# Components that cannot be had: a probe project asks for them.
set(probe ${WORK}/probe)
file(WRITE ${probe}/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.20)
project(probe LANGUAGES CXX)
separate_arguments(find_args UNIX_COMMAND "${FIND_ARGS}")
find_package(NeuroShard CONFIG ${find_args})
message(STATUS "Planner: ${NeuroShard_Planner_FOUND}, "
               "Neural: ${NeuroShard_Neural_FOUND}")
if(TARGET NeuroShard::Planner AND NOT TARGET NeuroShard::NeuralCostModel)
  message(STATUS "planner without the neural model")
endif()
]=])
function(probe name)
  file(REMOVE_RECURSE ${probe}/build-${name})
  set(cmd ${only_llvm} -S ${probe} -B ${probe}/build-${name} ${ARGN})
  set(cmd "${cmd}" PARENT_SCOPE)
endfunction()

probe(unknown "-DFIND_ARGS=REQUIRED COMPONENTS Planner Plannr")
run_failing(${cmd})
expect_words("unknown NeuroShard component 'Plannr'; the components are Planner, Dialect, Runtime, Neural, MPI, CUDA"
       "an unknown component")

probe(required "-DFIND_ARGS=REQUIRED COMPONENTS Planner Neural")
run_failing(${cmd})
expect_words("NeuroShard component Neural is not available:" "a missing dependency")

probe(optional "-DFIND_ARGS=REQUIRED COMPONENTS Planner OPTIONAL_COMPONENTS Neural")
run(${cmd})
expect_words("Planner: TRUE, Neural: FALSE" "an optional component")
expect_words("planner without the neural model" "an optional component")

message(STATUS "package components, no system paths, tool targets: ok")
