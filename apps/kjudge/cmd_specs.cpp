// `kjudge specs`: the GPU's properties, NVML readings, derived peaks and datasheet row. This is not
// an evaluation, so it calls the CUDA runtime in this process (the orchestrator rule does not
// apply). Without a GPU it says so on stderr, prints the datasheet table and exits 0.

#include <cstdio>
#include <filesystem>

#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/device/specs.hpp>

#include "commands.hpp"

namespace kj::app {

CLI::App* add_specs_command(CLI::App& app, specs_args& a) {
  auto* cmd = app.add_subcommand("specs", "GPU properties and datasheet peaks");
  cmd->set_help_flag();  // help comes from docs/cli.md (main.cpp)
  cmd->add_option("--json", a.json_path)->check(not_empty_path());
  cmd->add_flag("--all", a.all);
  return cmd;
}

int run_specs(const specs_args& a) {
  check_json_path(a.json_path);
  const auto report = device::collect_specs();
  // Without a GPU the table is all there is to show, so it is shown (and written) as with --all.
  const bool with_table = a.all || !report.gpu_available;
  if (!report.gpu_available)
    std::fprintf(stderr, "kjudge specs: no GPU (%s); showing the datasheet table only\n",
                 report.gpu_unavailable_reason.c_str());
  // The text first: a --json that cannot be written then loses nothing of what was measured.
  if (a.json_path != "-") {
    std::string text = device::render_specs_text(report);
    if (with_table) text += device::render_datasheet_table();
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return write_json_last(a.json_path, device::to_json(report, with_table).dump(2) + "\n", "specs");
}

}  // namespace kj::app
