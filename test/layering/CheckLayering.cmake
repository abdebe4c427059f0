#===- CheckLayering.cmake - No include points up the library graph --------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
#
# cmake -DSOURCE_DIR=<repository> -P CheckLayering.cmake
#
# Every library may include its own headers and those of the libraries
# below it (docs/design.md §2), never one above: the planner and the cost
# models know nothing of MLIR, of execution or of the runtime, and the
# runtime nothing of the compiler. Fails naming each file and include that
# breaks the rule.

cmake_minimum_required(VERSION 3.20)

set(layers Support Sharding CostModel Planner Runtime Selection Dialect
           Transforms Conversion Execution)
# What each library may include besides itself.
set(allowed_Support "")
set(allowed_Sharding Support)
set(allowed_CostModel Support Sharding)
set(allowed_Planner Support Sharding CostModel)
set(allowed_Runtime Support Sharding)
set(allowed_Selection Support Sharding CostModel Planner Runtime)
set(allowed_Dialect Support Sharding)
set(allowed_Transforms Support Sharding CostModel Planner Selection Dialect)
set(allowed_Conversion Support Sharding Runtime Dialect)
set(allowed_Execution Support Sharding CostModel Planner Runtime Selection
                      Dialect Transforms Conversion)

set(violations "")
foreach(layer IN LISTS layers)
  file(GLOB_RECURSE files
    "${SOURCE_DIR}/lib/${layer}/*.cpp" "${SOURCE_DIR}/lib/${layer}/*.h"
    "${SOURCE_DIR}/include/neuroshard/${layer}/*.h")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" includes REGEX "^#include \"neuroshard/[A-Za-z]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"neuroshard/([A-Za-z]+)/.*" "\\1"
             target "${line}")
      if(target STREQUAL layer OR target IN_LIST allowed_${layer})
        continue()
      endif()
      file(RELATIVE_PATH where "${SOURCE_DIR}" "${file}")
      string(REPLACE ";" ", " allowed_text "${allowed_${layer}}")
      string(APPEND violations
        "  ${where}: ${line} (${layer} may include only ${layer}"
        " and: ${allowed_text})\n")
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "includes that point up the library graph:\n"
                      "${violations}")
endif()
message(STATUS "library layering: no include points up")
