# Third-party libraries, all from the system's package manager; nothing is downloaded.
find_package(Threads REQUIRED)
find_package(CUDAToolkit REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
if(KJ_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# Optional toolkit parts become macros in the generated config.hpp.
set(KJ_HAVE_CUPTI 0)
if(TARGET CUDA::cupti)
  set(KJ_HAVE_CUPTI 1)
endif()
