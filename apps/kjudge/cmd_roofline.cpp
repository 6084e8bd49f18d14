// `kjudge roofline`: the GPU's measured ceilings, cached per GPU UUID and driver. Like `specs`, it
// is not an evaluation and uses the GPU in this process. Without a GPU it can still show a saved
// result (--from); otherwise it says why there is nothing to show and exits 1 (docs/cli.md).

#include <cstdio>
#include <string>

#include <kjudge/compile/nvcc.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/exit_codes.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/roofline/cache.hpp>
#include <kjudge/roofline/check.hpp>
#include <kjudge/roofline/obtain.hpp>
#include <kjudge/roofline/report.hpp>

#include "commands.hpp"

namespace kj::app {

CLI::App* add_roofline_command(CLI::App& app, roofline_args& a) {
  auto* cmd = app.add_subcommand("roofline", "measured ceilings of the GPU, cached per GPU");
  cmd->set_help_flag();  // help comes from docs/cli.md (main.cpp)
  auto* refresh = cmd->add_flag("--refresh", a.refresh);
  cmd->add_option("--json", a.json_path)->check(not_empty_path());
  auto* from =
      cmd->add_option("--from", a.from_path)->check(not_empty_path("a kjudge.roofline/1 file"));
  auto* device = cmd->add_option("--device", a.device)->transform(decimal_in(0, 1023));
  auto* repetitions =
      cmd->add_option("--repetitions", a.repetitions)->transform(decimal_in(5, 100));
  auto* cache = cmd->add_option("--cache-dir", a.cache_dir)->check(not_empty_path("a folder"));
  // A saved result is shown as it is: what would measure (or find a cached) one does not apply
  // (they were accepted and ignored).
  for (auto* o : {refresh, device, repetitions, cache}) from->excludes(o);
  return cmd;
}

namespace {

/** Exit code of `roofline` when there is no GPU and no --from file (docs/cli.md). */
constexpr int no_gpu_exit_code = 1;

}  // namespace

int run_roofline(const roofline_args& a) {
  check_json_path(a.json_path);
  roofline::roofline_result result;
  std::string origin;
  if (!a.from_path.empty()) {
    result = roofline::read_result(a.from_path);
    origin = "read from " + a.from_path;
  } else {
    const auto probe = cuda::probe();
    if (!probe.available) {
      std::fprintf(stderr,
                   "kjudge roofline: no GPU (%s): nothing to measure; --from <file> shows a saved "
                   "result\n",
                   probe.reason.c_str());
      return no_gpu_exit_code;
    }
    if (a.device >= probe.device_count)
      KJ_THROW(error_kind::usage, "--device {}: there are {} CUDA devices", a.device,
               probe.device_count);
    roofline::obtain_options o;
    o.device = a.device;
    o.repetitions = a.repetitions;
    o.refresh = a.refresh;
    o.cache_root =
        a.cache_dir.empty() ? compile::default_cache_dir() : std::filesystem::path(a.cache_dir);
    o.progress = [](std::string_view step) {
      std::fprintf(stderr, "kjudge roofline: %.*s\n", static_cast<int>(step.size()), step.data());
    };
    auto got = roofline::obtain_roofline(o);
    result = std::move(got.result);
    origin = std::move(got.origin);
  }
  const auto checked = roofline::check_roofline(result);
  // The text first: a --json that cannot be written then loses nothing of what was measured.
  if (a.json_path != "-") {
    const std::string text = roofline::render_text(result, checked, origin);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return write_json_last(a.json_path, roofline::to_document(result, checked).dump(2) + "\n",
                         "roofline");
}

}  // namespace kj::app
