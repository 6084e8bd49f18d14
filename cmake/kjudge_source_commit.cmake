# Run at every build (cmake -P, from kjudge/CMakeLists.txt): writes OUT, a header defining
# KJ_SOURCE_COMMIT, the source tree's commit as 12 hex digits, followed by "-dirty" where tracked
# files differ from it ("9d5a81b1c2d3-dirty"), or "unknown" outside a git checkout (a tarball)
# or without git. Neither git command below writes to the repository (git describe --dirty
# refreshes the index and takes its lock, which could race a `git commit` run beside a build).
# The file is rewritten only when its text changes, so that an unchanged commit recompiles
# nothing; only the executable's apps/kjudge/build_commit.cpp includes it.
set(_commit "unknown")
find_program(_git git)
if(_git AND EXISTS "${SRC}/.git")
  execute_process(
    COMMAND "${_git}" -C "${SRC}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE _head
    ERROR_QUIET
    RESULT_VARIABLE _rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_rc EQUAL 0 AND NOT _head STREQUAL "")
    set(_commit "${_head}")
    execute_process(
      COMMAND "${_git}" --no-optional-locks -C "${SRC}" status --porcelain --untracked-files=no
      OUTPUT_VARIABLE _changes
      ERROR_QUIET
      RESULT_VARIABLE _rc
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _rc EQUAL 0)
      set(_commit "${_head}-unknown-state")
    elseif(NOT _changes STREQUAL "")
      set(_commit "${_head}-dirty")
    endif()
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
