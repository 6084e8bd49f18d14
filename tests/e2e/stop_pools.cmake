# Stops the worker pools of this build's kjudge, once the end-to-end tests have run (ctest runs it
# as the cleanup of the fixture kj_e2e_pool, which every end-to-end test requires): the tests'
# evaluations are forked from a pool (kjudge_runner.hpp, choose_worker()), which would otherwise
# wait 10 minutes for another request. Pools of any other kjudge executable are left alone.
#   cmake -DKJ_KJUDGE_EXE=<build>/kjudge -P stop_pools.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT EXISTS "${KJ_KJUDGE_EXE}")
  message(FATAL_ERROR "stop_pools: no kjudge executable at '${KJ_KJUDGE_EXE}'")
endif()
file(REAL_PATH "${KJ_KJUDGE_EXE}" exe)

# The pids of the pools `kjudge pool list` shows for ${exe}, into <out>.
function(pools_of_this_build out)
  execute_process(COMMAND "${exe}" pool list --json -
    OUTPUT_VARIABLE listing ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "stop_pools: kjudge pool list failed (${rc}): ${err}")
  endif()
  string(JSON count LENGTH "${listing}" pools)
  set(pids "")
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON pool_exe GET "${listing}" pools ${i} executable)
      string(JSON pid GET "${listing}" pools ${i} pid)
      if(pool_exe STREQUAL exe)
        list(APPEND pids ${pid})
      endif()
    endforeach()
  endif()
  set(${out} "${pids}" PARENT_SCOPE)
endfunction()

pools_of_this_build(pids)
if(pids STREQUAL "")
  message(STATUS "stop_pools: no pool of ${exe} runs")
  return()
endif()
# A pool that ended by itself between the listing and the stop makes `pool stop` a usage error
# (a pid that is no pool): not a failure here, so its status is only shown; what fails the
# cleanup is a pool of the list that still runs after it.
execute_process(COMMAND "${exe}" pool stop ${pids}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
pools_of_this_build(after)
set(left "")
foreach(pid IN LISTS after)
  if(pid IN_LIST pids)
    list(APPEND left ${pid})
  endif()
endforeach()
if(NOT left STREQUAL "")
  message(FATAL_ERROR "stop_pools: pools ${left} of ${exe} still run (pool stop: ${rc}): ${out}${err}")
endif()
message(STATUS "stop_pools: stopped ${pids} (${exe})")
