# Language levels, warnings and CUDA targets for every kjudge target.
option(KJ_BUILD_TESTS "Build the unit, GPU and end-to-end tests" ON)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

# CMake 3.25 cannot set C++20 for CUDA through CUDA_STANDARD: a .cu source inherits the target's
# C++20 and configure fails for want of a flag. Pass -std=c++20 ourselves and tell CMake the
# standard needs no flag of its own.
set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -std=c++20 --expt-relaxed-constexpr")
set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "")
set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "")

add_library(kjudge_warnings INTERFACE)
target_compile_options(kjudge_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>)
add_library(kjudge::warnings ALIAS kjudge_warnings)
