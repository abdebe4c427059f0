# Installs the build into a fresh prefix and runs python_package.py outside
# the source and build trees, with PYTHONPATH naming only the installed
# package's directory: `import neuroshard` must find the installed package,
# its C++ module the installed cost-model bundles, and neuroshard.plan must
# plan as the installed neuroshard-plan does.
#
# cmake -DBUILD_DIR=... -DWORK=... -DSOURCE_DIR=... -DPYTHON=...
#       -DPYTHONDIR=... -P InstallPythonPackage.cmake

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR}
                --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${err}")
endif()

file(COPY ${SOURCE_DIR}/test/install/python_package.py
          ${SOURCE_DIR}/test/neuroshard-plan/Inputs/torchrec.json
     DESTINATION ${WORK}/run)
execute_process(COMMAND ${CMAKE_COMMAND} -E env
                --unset=NEUROSHARD_MODELS_DIR
                PYTHONPATH=${prefix}/${PYTHONDIR} PYTHONDONTWRITEBYTECODE=1
                ${PYTHON} python_package.py ${prefix} torchrec.json
                WORKING_DIRECTORY ${WORK}/run
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed package failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "${out}")
