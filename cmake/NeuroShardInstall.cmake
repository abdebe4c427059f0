# What `cmake --install` puts under the prefix, and the package that
# `find_package(NeuroShard)` finds there:
#
#   bin/                        the tools
#   lib/                        the libraries (static) and the CUDA runtime
#   include/neuroshard/         headers, TableGen sources, generated .inc
#   share/neuroshard/models/    the shipped cost-model bundles
#   lib/cmake/NeuroShard/       NeuroShardConfig.cmake and its targets
#
# Exported targets are named NeuroShard::<name>. They are exported in parts,
# one NeuroShard<Part>Targets.cmake each, so that a consumer loads only the
# parts of the components it asks for and finds only what those need
# (NeuroShardConfig.cmake.in says which parts make a component and what each
# part finds); the tools are NeuroShardToolsTargets.cmake.

include(CMakePackageConfigHelpers)

set(NEUROSHARD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/NeuroShard)

# Each part: <target> <exported name> ... Later parts link earlier ones.
set(part_Planner
  NeuroShardHostInfo HostInfo
  NeuroShardSupport Support
  NeuroShardSharding Sharding
  NeuroShardCostModelCore CostModelCore
  NeuroShardAvailableCostModels CostModel
  NeuroShardPlanner Planner)
set(part_Runtime
  NeuroShardRuntime Runtime
  NeuroShardSelection Selection)
set(part_Dialect
  MLIRNeuroShardDialect Dialect
  MLIRNeuroShardSPMD SPMD
  MLIRNeuroShardTransforms Transforms
  MLIRNeuroShardConversion Conversion
  MLIRNeuroShardToCUDA ToCUDA)
set(part_Execution
  NeuroShardExecution Execution)
set(parts Planner Runtime Dialect Execution)
if(NEUROSHARD_HAS_TORCH)
  set(part_Neural NeuroShardNeuralCostModel NeuralCostModel)
  list(APPEND parts Neural)
endif()
if(NEUROSHARD_HAS_MPI)
  set(part_MPI
    NeuroShardMPIRuntime MPIRuntime
    NeuroShardDistributedRun DistributedRun)
  list(APPEND parts MPI)
endif()
if(NEUROSHARD_HAS_CUDA)
  # neuroshard_cuda_runtime is the shared library of mgpu* entry points that
  # lowered host code calls (mlir-runner --shared-libs=$<TARGET_FILE:...>).
  set(part_CUDA
    NeuroShardCudaRuntime CudaRuntime
    neuroshard_cuda_runtime neuroshard_cuda_runtime)
  list(APPEND parts CUDA)
endif()

# The parts this install has and their exported names, for the config.
set(NEUROSHARD_CONFIG_PARTS "")
foreach(part IN LISTS parts)
  set(targets)
  set(names)
  list(LENGTH part_${part} count)
  math(EXPR last "${count} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET part_${part} ${i} target)
    list(GET part_${part} ${j} name)
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "SHARED_LIBRARY")
      target_include_directories(${target} INTERFACE
        $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
      # Instrumented libraries need the sanitizers' runtimes in whatever
      # links them, a consumer of the installed package included.
      if(NEUROSHARD_ENABLE_SANITIZERS)
        target_link_options(${target} INTERFACE
          $<INSTALL_INTERFACE:-fsanitize=address,undefined>)
      endif()
    endif()
    list(APPEND targets ${target})
    list(APPEND names ${name})
  endforeach()
  install(TARGETS ${targets} EXPORT NeuroShard${part}Targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT NeuroShard${part}Targets NAMESPACE NeuroShard::
    DESTINATION ${NEUROSHARD_CMAKE_DIR})
  string(REPLACE ";" " " names "${names}")
  string(APPEND NEUROSHARD_CONFIG_PARTS
    "set(_NeuroShard_part_targets_${part} ${names})\n")
endforeach()
string(REPLACE ";" " " parts_text "${parts}")
string(APPEND NEUROSHARD_CONFIG_PARTS
  "set(_NeuroShard_built_parts ${parts_text})")

# Tools, exported as NeuroShard::<tool> for $<TARGET_FILE:...>.
set(tools)
foreach(tool neuroshard-opt neuroshard-plan neuroshard-run neuroshard-collect
    neuroshard-bench neuroshard-kernel-bench neuroshard-comm-collect
    neuroshard-cuda-runner neuroshard-cuda-emulate neuroshard-nccl-check)
  if(TARGET ${tool})
    list(APPEND tools ${tool})
  endif()
endforeach()
install(TARGETS ${tools} EXPORT NeuroShardToolsTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT NeuroShardToolsTargets NAMESPACE NeuroShard::
  DESTINATION ${NEUROSHARD_CMAKE_DIR})
# The exchange on GPUs, which lowered host code and neuroshard-nccl-check
# load; it needs NCCL, CUDA and MPI at once, so no component exports it.
if(TARGET neuroshard_nccl_exchange)
  install(TARGETS neuroshard_nccl_exchange
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
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

# The documentation the tools' --help names, laid out as in the sources so
# that README.md's links hold.
install(FILES ${PROJECT_SOURCE_DIR}/README.md
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/neuroshard)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/neuroshard/docs
  PATTERN CMakeLists.txt EXCLUDE)

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
