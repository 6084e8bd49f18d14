# The embedded interpreter. KJ_PYTHON names the interpreter whose shared libpython is embedded and
# whose site-packages hold torch (the Makefile passes the project venv's python3). FindPython reads
# the include and library paths of the base installation from it.
set(KJ_PYTHON "" CACHE FILEPATH "python3 to embed (must have torch; a venv's python3 is fine)")
if(KJ_PYTHON)
  set(Python3_EXECUTABLE "${KJ_PYTHON}")
endif()
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Embed)
if(NOT KJ_PYTHON)
  set(KJ_PYTHON "${Python3_EXECUTABLE}")
endif()

# pybind11: Debian's pybind11-dev installs a CMake package; pip's pybind11 tells where its own is.
find_package(pybind11 CONFIG QUIET)
if(NOT pybind11_FOUND)
  execute_process(COMMAND "${Python3_EXECUTABLE}" -m pybind11 --cmakedir
                  OUTPUT_VARIABLE _kj_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _kj_pybind11_rc ERROR_QUIET)
  if(_kj_pybind11_rc EQUAL 0)
    find_package(pybind11 CONFIG REQUIRED PATHS "${_kj_pybind11_dir}" NO_DEFAULT_PATH)
  else()
    message(FATAL_ERROR "pybind11 not found: install pybind11-dev or pip install pybind11")
  endif()
endif()
message(STATUS "kjudge embeds ${KJ_PYTHON} (Python ${Python3_VERSION})")
