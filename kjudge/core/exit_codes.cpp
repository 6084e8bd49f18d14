#include <kjudge/core/error.hpp>
#include <kjudge/core/exit_codes.hpp>

namespace kj {

std::string_view to_string(eval_status s) noexcept {
  switch (s) {
    case eval_status::correct:
      return "correct";
    case eval_status::incorrect:
      return "incorrect";
    case eval_status::compile_error:
      return "compile_error";
    case eval_status::runtime_error:
      return "runtime_error";
    case eval_status::crashed:
      return "crashed";
    case eval_status::timed_out:
      return "timed_out";
    case eval_status::problem_error:
      return "problem_error";
    case eval_status::internal_error:
      return "internal_error";
  }
  return "internal_error";
}

eval_status eval_status_from_string(std::string_view s) {
  for (auto st : {eval_status::correct, eval_status::incorrect, eval_status::compile_error,
                  eval_status::runtime_error, eval_status::crashed, eval_status::timed_out,
                  eval_status::problem_error, eval_status::internal_error})
    if (to_string(st) == s) return st;
  KJ_THROW(error_kind::protocol, "unknown status '{}'", s);
}

int exit_code_for(eval_status s) noexcept {
  switch (s) {
    case eval_status::correct:
      return exit_code::correct;
    case eval_status::incorrect:
      return exit_code::incorrect;
    case eval_status::compile_error:
      return exit_code::compile_error;
    case eval_status::runtime_error:
    case eval_status::crashed:
      return exit_code::runtime_error;
    case eval_status::timed_out:
      return exit_code::timed_out;
    case eval_status::problem_error:
      return exit_code::problem_error;
    case eval_status::internal_error:
      return exit_code::internal_error;
  }
  return exit_code::internal_error;
}

}  // namespace kj
