# Stops the worker pools of this build's kjudge, once the end-to-end tests have run (ctest runs it
# as the cleanup of the fixture kj_e2e_pool, which every end-to-end test requires): the tests'
# evaluations are forked from a pool (kjudge_runner.hpp, choose_worker()), which would otherwise
# wait 10 minutes for another request. Every pool of this executable is stopped, a developer's
# own (started by build/kjudge eval) included; pools of any other kjudge executable are left.
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
      # A pool of an earlier link of this path reads "<path> (deleted)".
      if(pool_exe STREQUAL exe OR pool_exe STREQUAL "${exe} (deleted)")
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
# One pool at a time: `pool stop` checks every pid it is given before it stops any, so a pool
# that ended by itself after the listing (its idle exit, or a PoolCpu test's own pool, stopped
# by its suite just before) would keep the others running. Such a refusal is not a failure
# here; what fails the cleanup is a pool of the list that still runs after it (one serving an
# evaluation, or stopped: `pool stop` leaves those alone without --force).
set(out "")
foreach(pid IN LISTS pids)
  execute_process(COMMAND "${exe}" pool stop ${pid}
    OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
  string(APPEND out "pool stop ${pid}: ${rc} ${o}${e}")
endforeach()
pools_of_this_build(after)
set(left "")
foreach(pid IN LISTS after)
  if(pid IN_LIST pids)
    list(APPEND left ${pid})
  endif()
endforeach()
if(NOT left STREQUAL "")
  message(FATAL_ERROR "stop_pools: pools ${left} of ${exe} still run:\n${out}")
endif()
list(JOIN pids ", " stopped)
message(STATUS "stop_pools: stopped ${stopped} (${exe})")
