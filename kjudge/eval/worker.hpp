#pragma once
/** @file The pipeline a worker process runs for one evaluation. */

#include <functional>

#include <kjudge/eval/job.hpp>
#include <kjudge/eval/protocol.hpp>

namespace kj::eval {

/** Runs the whole evaluation, reporting through `events`, and always ends with a final event
 *  unless the process dies. Never throws. `before_teardown`, when given, is called after the final
 *  event with the interpreter and CUDA state still alive: the worker process ends there
 *  (std::_Exit) instead of paying for Python's and torch's teardown, which it does not need. */
void run_worker(const job& j, event_writer& events,
                const std::function<void()>& before_teardown = {});

}  // namespace kj::eval
