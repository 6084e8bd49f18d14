#pragma once
/** @file The result as JSON (schema kjudge.eval/1, docs/result-schema.md). */

#include <filesystem>
#include <string>

#include <kjudge/core/result.hpp>

namespace kj::report {

[[nodiscard]] std::string render_json(const eval_result& r);
/** Writes atomically (temporary file + rename); "-" writes to stdout. Throws kj::error(io). */
void write_json(const eval_result& r, const std::filesystem::path& path);
/** Reads and validates a stored result. Throws kj::error(io / protocol). */
[[nodiscard]] eval_result read_json(const std::filesystem::path& path);

}  // namespace kj::report
