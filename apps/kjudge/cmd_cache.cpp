// `kjudge cache`: what the build cache holds, and removing builds from it (docs/cli.md). Not an
// evaluation: it needs neither a GPU nor Python.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <kjudge/compile/cache.hpp>
#include <kjudge/compile/nvcc.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/exit_codes.hpp>
#include <kjudge/core/timestamp.hpp>
#include <kjudge/runner/file_lock.hpp>

#include "commands.hpp"

namespace kj::app {

namespace fs = std::filesystem;

CLI::App* add_cache_command(CLI::App& app, cache_args& a) {
  auto* cmd = app.add_subcommand("cache", "what the build cache holds; prune or clear it");
  cmd->set_help_flag();  // help comes from docs/cli.md (main.cpp)
  cmd->add_option("action", a.action)->check(CLI::IsMember({"info", "prune", "clear"}));
  cmd->add_option("--max-size", a.max_size)->check(not_empty("a size, such as 20G"));
  cmd->add_option("--unused-for", a.unused_for)->check(not_empty("a duration, such as 30d"));
  cmd->add_option("--keep-recent", a.keep_recent)->check(not_empty("a duration, such as 1h"));
  cmd->add_flag("--dry-run", a.dry_run);
  cmd->add_flag("--list", a.list);
  cmd->add_option("--json", a.json_path)->check(not_empty_path());
  cmd->add_option("--cache-dir", a.cache_dir)->check(not_empty_path("a folder"));
  return cmd;
}

namespace {

[[nodiscard]] std::string duration_text(std::chrono::seconds s) {
  const long long n = s.count();
  if (n > 0 && n % 86400 == 0) return fmt::format("{}d", n / 86400);
  if (n > 0 && n % 3600 == 0) return fmt::format("{}h", n / 3600);
  if (n > 0 && n % 60 == 0) return fmt::format("{}m", n / 60);
  return fmt::format("{}s", n);
}

/** "1 build", "3 builds". */
[[nodiscard]] std::string count_of(std::size_t n, std::string_view what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

[[nodiscard]] std::string relative_to(const fs::path& p, const fs::path& root) {
  const fs::path r = p.lexically_relative(root);
  return r.empty() ? p.string() : r.string();
}

[[nodiscard]] nlohmann::json tally_json(const compile::cache_tally& t) {
  return {{"count", t.count}, {"bytes", t.bytes}};
}

[[nodiscard]] nlohmann::json builds_json(const std::vector<compile::cache_entry>& builds) {
  auto out = nlohmann::json::array();
  for (const auto& e : builds)
    out.push_back({{"path", e.path.string()},
                   {"kind", std::string(compile::to_string(e.part))},
                   {"bytes", e.bytes},
                   {"last_used", utc_time(e.last_used)},
                   {"busy", e.busy}});
  return out;
}

[[nodiscard]] std::string parts_text(const compile::cache_inventory& inv) {
  const auto row = [](const char* what, const compile::cache_tally& t, std::string unit) {
    if (t.count == 1) unit.pop_back();  // "1 build"
    return fmt::format("  {:<20} {:>7} {:<7} {:>10}\n", what, t.count, unit,
                       compile::size_text(t.bytes));
  };
  std::string out;
  out += row("native builds", inv.native, "builds");
  out += row("load_inline builds", inv.load_inline, "folders");
  out += row("unfinished builds", inv.unfinished, "folders");
  out += row("roofline results", inv.roofline, "files");
  out += row("other", inv.other, "items");
  out += fmt::format("  {:<36} {:>10}\n", "total", compile::size_text(inv.total_bytes));
  return out;
}

/** "40s", "12m", "5h", "3d" ago. */
[[nodiscard]] std::string age_text(std::time_t then) {
  return span_text(static_cast<double>(std::time(nullptr) - then));
}

[[nodiscard]] std::string builds_text(const std::vector<compile::cache_entry>& builds,
                                      const fs::path& root) {
  std::string out;
  for (const auto& e : builds)
    out += fmt::format("    {} {:>5} ago  {:>10}  {:<11}  {}{}\n", utc_time(e.last_used),
                       age_text(e.last_used), compile::size_text(e.bytes),
                       compile::to_string(e.part), relative_to(e.path, root),
                       e.busy ? "  (a torch build lock: held, or under an hour old)" : "");
  return out;
}

[[nodiscard]] std::string limit_text(const compile::cache_limit& limit) {
  if (!limit.error.empty()) return fmt::format("none: {}", limit.error);
  if (!limit.bytes) return "none (KJUDGE_CACHE_MAX_SIZE turns it off)";
  return fmt::format(
      "{} ({}): an evaluation that finds the cache above it removes the builds used longest ago, "
      "none used in the last hour, down to {}",
      compile::size_text(*limit.bytes),
      limit.source == "default" ? "the default; KJUDGE_CACHE_MAX_SIZE sets another"
                                : "KJUDGE_CACHE_MAX_SIZE",
      compile::size_text(compile::prune_target(*limit.bytes)));
}

/** `kjudge cache info`'s text. */
[[nodiscard]] std::string info_text(const compile::cache_inventory& inv,
                                    const compile::cache_limit& limit, bool list) {
  const std::string root = inv.root.string();
  std::string text;
  if (!inv.exists) {
    text = fmt::format("kjudge cache: none at {} (nothing has been built there)\n", root);
  } else {
    text = fmt::format("kjudge cache: {}\n", root) + parts_text(inv);
    if (!inv.builds.empty())
      text +=
          fmt::format("  builds last used from {} to {}\n", utc_time(inv.builds.front().last_used),
                      utc_time(inv.builds.back().last_used));
    if (list && !inv.builds.empty())
      text += "  builds, least recently used first:\n" + builds_text(inv.builds, inv.root);
  }
  text += "  limit: " + limit_text(limit) + "\n";
  if (inv.exists && limit.bytes)
    text += fmt::format(
        "  the cache takes {:.0f}% of it{}\n",
        100.0 * static_cast<double>(inv.total_bytes) / static_cast<double>(*limit.bytes),
        inv.total_bytes > *limit.bytes
            ? ": the next evaluation removes builds (or kjudge cache prune)"
            : "");
  return text;
}

/** `kjudge cache prune`'s and `clear`'s text. */
[[nodiscard]] std::string prune_text(const compile::prune_outcome& out,
                                     const compile::prune_policy& policy, const cache_args& a) {
  const bool clear = policy.everything;
  const fs::path& root = out.before.root;
  const std::string what =
      clear ? std::string("every build")
            : fmt::format("{}{}{}",
                          policy.max_bytes ? fmt::format("the builds used longest ago until "
                                                         "the cache takes at most {}",
                                                         compile::size_text(*policy.max_bytes))
                                           : "",
                          policy.max_bytes && policy.unused_for ? ", and " : "",
                          policy.unused_for ? fmt::format("every build not used for {}",
                                                          duration_text(*policy.unused_for))
                                            : "");
  std::string text = fmt::format("kjudge cache {}: {}\n", a.action, root.string());
  if (!out.before.exists) {
    text += "  no cache there: nothing to remove\n";
  } else {
    if (out.removed.empty() && out.kept.empty() && !clear && policy.max_bytes &&
        !policy.unused_for && out.before.total_bytes <= *policy.max_bytes)
      text += fmt::format("  nothing to remove: the cache takes {}, at most {} already\n",
                          compile::size_text(out.before.total_bytes),
                          compile::size_text(*policy.max_bytes));
    else
      text += fmt::format("  {} {} ({}): {}\n", a.dry_run ? "would remove" : "removed",
                          count_of(out.removed.size(), "build"),
                          compile::size_text(out.removed_bytes), what);
    if (a.list) text += builds_text(out.removed, root);
    if (!out.kept.empty()) {
      text += fmt::format("  kept {} ({}) used in the last {} or being built\n",
                          count_of(out.kept.size(), "build"), compile::size_text(out.kept_bytes),
                          duration_text(policy.keep_recent));
      if (a.list) text += builds_text(out.kept, root);
    }
    if (out.leftovers_removed > 0)
      text += fmt::format("  removed {} that ended builds left\n",
                          count_of(out.leftovers_removed, "folder"));
    text += fmt::format("  the cache took {}, {} {}\n", compile::size_text(out.before.total_bytes),
                        a.dry_run ? "would take" : "takes", compile::size_text(out.bytes_after));
  }
  for (const auto& e : out.errors) text += "  could not remove " + e + "\n";
  return text;
}

void print_out(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

int run_cache(const cache_args& a) {
  check_json_path(a.json_path);
  const bool prune = a.action == "prune", clear = a.action == "clear";
  if (!prune && (!a.max_size.empty() || !a.unused_for.empty()))
    KJ_THROW(error_kind::usage, "--max-size and --unused-for apply to kjudge cache prune");
  if (!prune && !clear && (!a.keep_recent.empty() || a.dry_run))
    KJ_THROW(error_kind::usage,
             "--keep-recent and --dry-run apply to kjudge cache prune and clear");
  const fs::path root = a.cache_dir.empty() ? compile::default_cache_dir() : fs::path(a.cache_dir);
  const compile::cache_limit limit = compile::cache_limit_from_environment();

  compile::prune_policy policy;
  std::string why;
  if (!a.max_size.empty()) {
    policy.max_bytes = compile::parse_size(a.max_size, why);
    if (!policy.max_bytes) KJ_THROW(error_kind::usage, "--max-size: {}", why);
  }
  if (!a.unused_for.empty()) {
    policy.unused_for = compile::parse_duration(a.unused_for, why);
    if (!policy.unused_for) KJ_THROW(error_kind::usage, "--unused-for: {}", why);
  }
  // A build an evaluation may be loading right now stays, even for clear.
  policy.keep_recent = clear ? std::chrono::seconds(60) : std::chrono::seconds(3600);
  if (!a.keep_recent.empty()) {
    const auto keep = compile::parse_duration(a.keep_recent, why);
    if (!keep) KJ_THROW(error_kind::usage, "--keep-recent: {}", why);
    if (*keep < std::chrono::seconds(60))
      KJ_THROW(error_kind::usage,
               "--keep-recent {}: at least 1m (an evaluation may be loading a build it has just "
               "looked up)",
               a.keep_recent);
    policy.keep_recent = *keep;
  }
  if (prune && !policy.max_bytes && !policy.unused_for) {
    if (!limit.bytes)
      KJ_THROW(error_kind::usage,
               "kjudge cache prune: no limit is set ({}): give --max-size or --unused-for",
               !limit.error.empty() ? limit.error
               : std::getenv("KJUDGE_CACHE_MAX_SIZE") != nullptr
                   ? fmt::format("KJUDGE_CACHE_MAX_SIZE={}", std::getenv("KJUDGE_CACHE_MAX_SIZE"))
                   : std::string("KJUDGE_CACHE_MAX_SIZE is off"));
    policy.max_bytes = limit.bytes;
  }
  policy.everything = clear;
  policy.dry_run = a.dry_run;
  {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(root, ec)) && !fs::is_directory(root, ec))
      KJ_THROW(error_kind::io, "the cache {} is not a folder", root.string());
  }

  nlohmann::json doc = {{"schema", "kjudge.cache/1"},
                        {"action", a.action},
                        {"root", root.string()},
                        {"limit_bytes", limit.bytes ? nlohmann::json(*limit.bytes) : nullptr},
                        {"limit_source", limit.source}};
  if (!limit.error.empty()) doc["limit_error"] = limit.error;
  const auto add_parts = [&](const compile::cache_inventory& inv) {
    doc["exists"] = inv.exists;
    doc["parts"] = {{"native", tally_json(inv.native)},
                    {"load_inline", tally_json(inv.load_inline)},
                    {"unfinished", tally_json(inv.unfinished)},
                    {"roofline", tally_json(inv.roofline)},
                    {"other", tally_json(inv.other)}};
    doc["total_bytes"] = inv.total_bytes;
  };
  std::string text;
  int code = 0;
  if (!prune && !clear) {
    const auto inv = compile::scan_cache(root);
    add_parts(inv);
    doc["builds"] = builds_json(inv.builds);
    text = info_text(inv, limit, a.list);
  } else {
    // One prune of a cache at a time (the automatic one after an evaluation takes the same
    // lock, and skips its turn while this holds it). A dry run removes nothing and writes
    // nothing (the lock's files among them): it lists what a prune would remove now.
    runner::file_lock lock;
    std::error_code ec;
    if (!a.dry_run && fs::is_directory(root, ec)) {
      lock = runner::file_lock::acquire(compile::prune_lock_path(root), std::chrono::seconds(60));
      if (!lock.held())
        KJ_THROW(error_kind::io, "{}: {}",
                 lock.timed_out()
                     ? fmt::format("another prune of {} did not end within 60 s", root.string())
                     : fmt::format("cannot take the prune lock of {}", root.string()),
                 lock.error());
    }
    const auto out = compile::prune_cache(root, policy);
    add_parts(out.before);
    doc["policy"] = {
        {"max_bytes", policy.max_bytes ? nlohmann::json(*policy.max_bytes) : nullptr},
        {"unused_for_s", policy.unused_for ? nlohmann::json(policy.unused_for->count()) : nullptr},
        {"everything", policy.everything},
        {"keep_recent_s", policy.keep_recent.count()},
        {"dry_run", policy.dry_run}};
    doc["removed"] = builds_json(out.removed);
    doc["removed_bytes"] = out.removed_bytes;
    doc["kept"] = builds_json(out.kept);
    doc["leftovers_removed"] = out.leftovers_removed;
    doc["bytes_after"] = out.bytes_after;
    doc["errors"] = out.errors;
    text = prune_text(out, policy, a);
    if (!out.errors.empty()) code = exit_code::internal_error;
  }
  if (a.json_path != "-") print_out(text);
  if (code != 0 && a.json_path == "-")
    for (const auto& e : doc["errors"])
      std::fprintf(stderr, "kjudge cache: could not remove %s\n", e.get<std::string>().c_str());
  const int written = write_json_last(a.json_path, doc.dump(2) + "\n", "cache");
  return written != 0 ? written : code;
}

void prune_after_evaluation(const fs::path& cache_root, bool quiet) {
  try {
    const auto limit = compile::cache_limit_from_environment();
    if (!limit.error.empty()) {
      if (!quiet)
        std::fprintf(stderr, "kjudge: the build cache is not kept within a limit: %s\n",
                     limit.error.c_str());
      return;
    }
    const auto out = compile::prune_if_over_limit(cache_root);
    if (!out || quiet || !limit.bytes) return;
    std::string text =
        fmt::format("kjudge: the cache {} took {}, over its limit of {}", cache_root.string(),
                    compile::size_text(out->before.total_bytes), compile::size_text(*limit.bytes));
    if (!out->removed.empty())
      text +=
          fmt::format(": removed {} used longest ago ({})", count_of(out->removed.size(), "build"),
                      compile::size_text(out->removed_bytes));
    if (!out->kept.empty())
      text += fmt::format("{} kept {} used in the last hour or being built ({})",
                          out->removed.empty() ? ":" : ";", count_of(out->kept.size(), "build"),
                          compile::size_text(out->kept_bytes));
    if (out->removed.empty() && out->kept.empty() && out->errors.empty())
      text +=
          ": it holds no build to remove (what it takes is roofline results, unfinished "
          "builds and other files)";
    for (const auto& e : out->errors) text += "; could not remove " + e;
    text += fmt::format("; it takes {} now{}", compile::size_text(out->bytes_after),
                        out->bytes_after > *limit.bytes ? ", still over" : "");
    std::fprintf(stderr, "%s (kjudge cache says more)\n", text.c_str());
  } catch (const std::exception&) {  // the evaluation's result is out: nothing to add to it
  }
}

}  // namespace kj::app
