# What the install tests' scripts share. run and run_failing run a command
# that must succeed or fail, stop the script otherwise, and leave its
# stdout and stderr in `out` and `err`; expect and expect_words check what
# it said.

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# Like run, for a command that must fail.
function(run_failing)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "succeeded, expected to fail: ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# Stops the script unless `said` holds `text`; `what` names the command,
# whose `out` and `err` the message shows.
function(_expect_in said text what)
  string(FIND "${said}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected '${text}' in\n${out}\n${err}")
  endif()
endfunction()

# Stops the script unless the last command's output (`out` and `err`)
# holds `text`.
function(expect text what)
  _expect_in("${out}${err}" "${text}" "${what}")
endfunction()

# Like expect, with spaces and line breaks compared as one space: CMake
# wraps the messages it reports.
function(expect_words text what)
  string(REGEX REPLACE "[ \t\r\n]+" " " text "${text}")
  string(REGEX REPLACE "[ \t\r\n]+" " " said "${out}${err}")
  _expect_in("${said}" "${text}" "${what}")
endfunction()
