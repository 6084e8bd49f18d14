# Run at every build (cmake -P, from kjudge/CMakeLists.txt): writes OUT, a header defining
# KJ_SOURCE_COMMIT, the source tree's commit as `git describe --always --dirty` gives it
# ("9d5a81b1c2d3-dirty" where files differ from it), or "unknown" outside a git checkout (a
# tarball) or without git. The file is rewritten only when its text changes, so that an unchanged
# commit recompiles nothing.
set(_commit "unknown")
find_program(_git git)
if(_git AND EXISTS "${SRC}/.git")
  execute_process(
    COMMAND "${_git}" -C "${SRC}" describe --always --dirty --abbrev=12
    OUTPUT_VARIABLE _described
    ERROR_QUIET
    RESULT_VARIABLE _rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_rc EQUAL 0 AND NOT _described STREQUAL "")
    set(_commit "${_described}")
  endif()
endif()
set(_text "#pragma once\n// Generated at build time by cmake/kjudge_source_commit.cmake.\n#define KJ_SOURCE_COMMIT \"${_commit}\"\n")
set(_old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" _old)
endif()
if(NOT _old STREQUAL _text)
  file(WRITE "${OUT}" "${_text}")
endif()
