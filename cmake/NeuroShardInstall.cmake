# What `cmake --install` puts under the prefix, and the package that
# `find_package(NeuroShard)` finds there:
#
#   bin/                        the tools
#   lib/                        the libraries (static) and the CUDA runtime
#   include/neuroshard/         headers, TableGen sources, generated .inc
#   share/neuroshard/models/    the shipped cost-model bundles
#   lib/cmake/NeuroShard/       NeuroShardConfig.cmake and its targets
#
# Exported targets are named NeuroShard::<name>; NeuroShard::CostModel brings
# the neural cost model (and LibTorch) along when the build has it.

include(CMakePackageConfigHelpers)

set(NEUROSHARD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/NeuroShard)

# <target> <exported name>
set(exported
  NeuroShardSupport Support
  NeuroShardSharding Sharding
  NeuroShardRuntime Runtime
  NeuroShardCostModelCore CostModelCore
  NeuroShardAvailableCostModels CostModel
  NeuroShardPlanner Planner
  MLIRNeuroShardDialect Dialect
  MLIRNeuroShardSPMD SPMD
  MLIRNeuroShardTransforms Transforms
  MLIRNeuroShardConversion Conversion
  MLIRNeuroShardToCUDA ToCUDA
  NeuroShardExecution Execution)
if(NEUROSHARD_HAS_TORCH)
  list(APPEND exported NeuroShardNeuralCostModel NeuralCostModel)
endif()
if(NEUROSHARD_HAS_MPI)
  list(APPEND exported NeuroShardMPIRuntime MPIRuntime
    NeuroShardDistributedRun DistributedRun)
endif()
if(NEUROSHARD_HAS_CUDA)
  list(APPEND exported NeuroShardCudaRuntime CudaRuntime)
endif()

set(targets)
list(LENGTH exported count)
math(EXPR last "${count} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET exported ${i} target)
  list(GET exported ${j} name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  # Instrumented libraries need the sanitizers' runtimes in whatever links
  # them, a consumer of the installed package included.
  if(NEUROSHARD_ENABLE_SANITIZERS)
    target_link_options(${target} INTERFACE
      $<INSTALL_INTERFACE:-fsanitize=address,undefined>)
  endif()
  list(APPEND targets ${target})
endforeach()

install(TARGETS ${targets} EXPORT NeuroShardTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT NeuroShardTargets NAMESPACE NeuroShard::
  DESTINATION ${NEUROSHARD_CMAKE_DIR})

# Tools, and the libraries that lowered CUDA host code calls.
set(tools)
foreach(tool neuroshard-opt neuroshard-plan neuroshard-run neuroshard-collect
    neuroshard-bench neuroshard-kernel-bench neuroshard-comm-collect
    neuroshard-cuda-runner neuroshard-cuda-emulate neuroshard-nccl-check)
  if(TARGET ${tool})
    list(APPEND tools ${tool})
  endif()
endforeach()
install(TARGETS ${tools} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(library neuroshard_cuda_runtime neuroshard_nccl_exchange)
  if(TARGET ${library})
    install(TARGETS ${library} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endforeach()
if(TARGET neuroshard-nccl-check)
  set_property(TARGET neuroshard-nccl-check APPEND PROPERTY INSTALL_RPATH
    "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

# Headers and TableGen sources, and what TableGen generated from them.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/neuroshard
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/neuroshard
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc" PATTERN "*.h"
  PATTERN "CMakeFiles" EXCLUDE)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/neuroshard/models)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/NeuroShardConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/NeuroShardConfig.cmake
  INSTALL_DESTINATION ${NEUROSHARD_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/NeuroShardConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/NeuroShardConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/NeuroShardConfigVersion.cmake
  DESTINATION ${NEUROSHARD_CMAKE_DIR})
