// `kjudge pool`: the worker pools of this user (docs/cli.md), and stopping them. Not an
// evaluation: it needs neither a GPU nor Python.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <kjudge/core/error.hpp>
#include <kjudge/core/exit_codes.hpp>
#include <kjudge/eval/worker_pool.hpp>
#include <kjudge/runner/pool.hpp>

#include "commands.hpp"

namespace kj::app {

CLI::App* add_pool_command(CLI::App& app, pool_args& a) {
  auto* cmd = app.add_subcommand("pool", "the worker pools of this user; stop them");
  cmd->set_help_flag();  // help comes from docs/cli.md (main.cpp)
  cmd->add_option("action", a.action)->check(CLI::IsMember({"list", "stop"}));
  cmd->add_option("pids", a.pids)->transform(decimal_in(1, 4194304));
  cmd->add_flag("--force", a.force);
  cmd->add_option("--json", a.json_path)->check(not_empty_path());
  return cmd;
}

namespace {

/** The value after `flag` in a pool's command line, or "". */
[[nodiscard]] std::string argument(const runner::pool_server_info& p, std::string_view flag) {
  for (std::size_t i = 0; i + 1 < p.argv.size(); ++i)
    if (p.argv[i] == flag) return p.argv[i + 1];
  return "";
}

/** Whether the holder of a pool's address is a pool server (`kjudge worker-pool --address A`,
 *  A its address), not another process that took a name of that form. */
[[nodiscard]] bool is_pool_server(const runner::pool_server_info& p) {
  return p.argv.size() > 1 && p.argv[1] == "worker-pool" && argument(p, "--address") == p.address;
}

[[nodiscard]] std::string state_of(const runner::pool_server_info& p) {
  if (p.stopped) return "stopped";
  return p.accepting ? "accepting" : "starting";
}

[[nodiscard]] nlohmann::json pool_json(const runner::pool_server_info& p) {
  const std::string idle = argument(p, "--idle-exit-s");
  return {{"address", p.address},
          {"pid", p.pid},
          {"state", state_of(p)},
          {"age_s", std::round(p.age_s * 10) / 10},
          {"serving", p.serving},
          {"idle_exit_s", idle.empty() ? nlohmann::json(nullptr)
                                       : nlohmann::json(std::strtol(idle.c_str(), nullptr, 10))},
          {"python", argument(p, "--python")},
          {"executable", p.executable}};
}

[[nodiscard]] std::string pool_line(const runner::pool_server_info& p) {
  const std::string idle = argument(p, "--idle-exit-s");
  return fmt::format("  pid {:<8} {:<10} up {:<4} serving {:<3} python {}\n    {}{}\n", p.pid,
                     state_of(p), span_text(p.age_s), p.serving, argument(p, "--python"),
                     p.executable.empty() ? "(executable unreadable)" : p.executable,
                     idle.empty() ? "" : fmt::format(" (exits after {} s without requests)", idle));
}

}  // namespace

int run_pool(const pool_args& a) {
  check_json_path(a.json_path);
  if (a.force && a.action != "stop")
    KJ_THROW(error_kind::usage, "--force applies to kjudge pool stop");
  auto pools = runner::pool_servers(eval::pool_address_prefix());
  std::erase_if(pools, [](const auto& p) { return !is_pool_server(p); });
  for (const pid_t pid : a.pids)
    if (std::none_of(pools.begin(), pools.end(), [&](const auto& p) { return p.pid == pid; }))
      KJ_THROW(error_kind::usage,
               "pid {} is not a worker pool of this user (kjudge pool lists them)", pid);
  if (!a.pids.empty())
    std::erase_if(pools, [&](const auto& p) {
      return std::find(a.pids.begin(), a.pids.end(), p.pid) == a.pids.end();
    });
  nlohmann::json doc = {{"schema", "kjudge.pool/1"}, {"action", a.action}};
  doc["pools"] = nlohmann::json::array();
  for (const auto& p : pools) doc["pools"].push_back(pool_json(p));
  std::string text = fmt::format("worker pools of this user: {}\n", pools.size());
  for (const auto& p : pools) text += pool_line(p);
  int code = exit_code::correct;
  if (a.action == "stop") {
    doc["stopped"] = nlohmann::json::array();
    doc["left"] = nlohmann::json::array();
    for (const auto& p : pools) {
      const auto r = runner::stop_pool_server(p, a.force, std::chrono::seconds(10));
      if (r.outcome == runner::pool_stop::stopped || r.outcome == runner::pool_stop::gone) {
        text += fmt::format("stopped pid {}{}\n", p.pid,
                            r.outcome == runner::pool_stop::gone ? " (it had ended)" : "");
        doc["stopped"].push_back(p.pid);
      } else {
        text += fmt::format("left pid {}: {}\n", p.pid, r.why);
        doc["left"].push_back({{"pid", p.pid}, {"why", r.why}});
        code = exit_code::internal_error;
      }
    }
  }
  if (a.json_path != "-") std::fwrite(text.data(), 1, text.size(), stdout);
  const int written = write_json_last(a.json_path, doc.dump(2) + "\n", "pool");
  return written != 0 ? written : code;
}

}  // namespace kj::app
