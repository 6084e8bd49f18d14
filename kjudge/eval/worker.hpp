#pragma once
/** @file The pipeline a worker process runs for one evaluation. */

#include <kjudge/eval/job.hpp>
#include <kjudge/eval/protocol.hpp>

namespace kj::eval {

/** Runs the whole evaluation, reporting through `events`, and always ends with a final event
 *  unless the process dies. Never throws. */
void run_worker(const job& j, event_writer& events);

}  // namespace kj::eval
