# Language levels, warnings and CUDA targets for every kjudge target.
option(KJ_BUILD_TESTS "Build the unit, GPU and end-to-end tests" ON)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

# No GPU on the build machines: never "native". Candidates are compiled at run time for the
# device that is actually present; this list only covers kjudge's own kernels.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES "80-real;89-real;90-real;100-real;100-virtual")
endif()
# CMake 3.25 cannot set C++20 for CUDA through CUDA_STANDARD, so pass it directly.
set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -std=c++20 --expt-relaxed-constexpr")

add_library(kjudge_warnings INTERFACE)
target_compile_options(kjudge_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>)
add_library(kjudge::warnings ALIAS kjudge_warnings)
