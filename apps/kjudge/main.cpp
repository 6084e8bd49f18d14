// kjudge's entry point: parses the command line, dispatches, and translates errors into exit
// codes. Help text comes from docs/cli.md (help.cpp).

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/exit_codes.hpp>
#include <kjudge/core/source_commit.hpp>
#include <kjudge/core/text.hpp>
#include <kjudge/runner/fence.hpp>

#include "build_commit.hpp"

#include "commands.hpp"
#include "help.hpp"

namespace {

bool wants_help(int argc, char** argv, std::string& command) {
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--nvcc-flag") {  // its value is nvcc's, "-h" included
      ++i;
      continue;
    }
    if (a == "-h" || a == "--help")
      help = true;
    else if (command.empty() && !a.starts_with("-"))
      command = a;
  }
  return help;
}

int print_help(const std::string& command, std::FILE* to = stdout) {
  const auto text = kj::app::help_section(command);
  if (text.empty()) {
    std::fprintf(stderr, "kjudge: no help for '%s'\n", command.c_str());
    return kj::exit_code::usage;
  }
  std::fwrite(text.data(), 1, text.size(), to);
  return 0;
}

/** CLI11's text for an error, in kjudge's words where CLI11's are its parser's own ("--trials:
 *  At Most 1 required but received 2" for an option given twice). */
std::string parse_error_text(const CLI::ParseError& e) {
  std::string text = e.what();
  const std::string twice = "At Most 1 required but received ";
  if (const auto at = text.find(twice); at != std::string::npos)
    return text.substr(0, at) + "given " + text.substr(at + twice.size()) +
           " times; an option's value is given once";
  // "--trials: 1 required INT missing", an option given last without its value.
  const std::string missing = ": 1 required ";
  if (const auto at = text.find(missing); at != std::string::npos && text.ends_with(" missing")) {
    const std::string type =
        text.substr(at + missing.size(),
                    text.size() - at - missing.size() - std::string_view(" missing").size());
    std::string what = "a value";
    if (type == "INT" || type == "UINT") what = "an integer";
    if (type == "FLOAT") what = "a number";
    if (type.starts_with("TEXT:PATH")) what = "a path";
    if (const auto brace = type.find('{'); brace != std::string::npos)
      what = "one of " + type.substr(brace);
    return text.substr(0, at) + ": no value given; it takes " + what;
  }
  return text;
}

/** What was given that no option or argument of the command takes, or "" where nothing was. Said
 *  before any other parse error: CLI11 checks what is required first, so a mistyped option
 *  read as "problem is required" where the problem had been given after it. */
std::string unexpected_text(const CLI::App& app, int argc, char** argv) {
  if (app.remaining_size(true) == 0) return {};  // a bare "--" is not a mistake
  // Unknown options alone where there are any: the value that followed one took the place of a
  // positional argument, and the word left over is not the mistake. A word after "--" is an
  // argument (CLI11 does not always keep the "--" among what is left); "-" and negative numbers
  // are arguments too.
  std::vector<std::string_view> after_separator;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      after_separator.assign(argv + i + 1, argv + argc);
      break;
    }
  std::vector<std::string> options, words;
  for (const auto& a : app.remaining(true)) {
    if (a == "--") continue;
    const bool number =
        a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1])) != 0 || a[1] == '.');
    const bool option =
        a.size() > 1 && a[0] == '-' && !number &&
        std::find(after_separator.begin(), after_separator.end(), a) == after_separator.end();
    (option ? options : words).push_back(a);
  }
  const auto& named = options.empty() ? words : options;
  if (named.empty()) return {};
  return fmt::format("{} {}{}: {}", options.empty() ? "unexpected" : "unknown",
                     options.empty() ? "argument" : "option", named.size() > 1 ? "s" : "",
                     fmt::join(named, " "));
}

/** "--name=" with nothing after the "=" and a word after it, before any "--", where --name is
 *  an option of the command that takes a value: CLI11 takes that word as the value (`--json= 3`
 *  wrote the result to a file called 3, `--nvcc-flag= --no-timing` took the flag for nvcc's),
 *  where an empty value is refused everywhere else (docs/cli.md). Given last, CLI11's own "no
 *  value given" says it; an unknown option or a flag is CLI11's to refuse. */
std::string empty_assignment_text(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return {};
  const std::string name = argv[1];
  const auto commands = app.get_subcommands([&](const CLI::App* c) { return c->check_name(name); });
  if (commands.empty()) return {};
  const CLI::App& command = *commands.front();
  for (int i = 2; i + 1 < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a.size() < 4 || !a.starts_with("--") || a.find('=') != a.size() - 1) continue;
    const std::string option(a.substr(0, a.size() - 1));
    const CLI::Option* o = command.get_option_no_throw(option);
    if (o == nullptr || o->get_expected_max() == 0) continue;  // unknown, or a flag
    return fmt::format(
        "{}: an empty value after '=' (an empty value is refused; write {} VALUE "
        "or {}VALUE)",
        option, option, a);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  kj::set_source_commit(kj::app::build_commit());
  // Ignored dispositions survive exec: a parent that ignored SIGCHLD would have every child reaped
  // by the kernel, and a worker's exit status (a segfault) lost.
  std::signal(SIGCHLD, SIG_DFL);
  if (argc >= 2 && std::strcmp(argv[1], "worker") == 0) return kj::app::run_worker_command();
  if (argc >= 2 && std::strcmp(argv[1], "worker-pool") == 0)
    return kj::app::run_worker_pool_command(argc, argv);
  // A reader of the report that went away (`kjudge eval ... | head`) must not end kjudge before
  // it has written --json and reaped its worker: writes to it fail instead (children get the
  // default back, runner::detail::reset_child_process).
  std::signal(SIGPIPE, SIG_IGN);
  // No process of the user (a candidate's, in particular) may attach to this one, or read or
  // write its memory through /proc/<pid>/mem: an evaluation's verdict and secrets are here
  // (runner/fence.hpp). A worker makes itself so, and fences off this process besides; a
  // pool server stays dumpable (its clients find it by its descriptors in /proc).
  kj::runner::set_not_dumpable();

  std::string command;
  if (wants_help(argc, argv, command)) return print_help(command);
  if (argc < 2) {
    print_help("", stderr);  // a usage error, as any other: its text on stderr
    return kj::exit_code::usage;
  }

  CLI::App app{"kjudge"};
  app.set_help_flag();
  app.set_version_flag("--version", fmt::format("kjudge {} ({})", KJ_VERSION, kj::source_commit()));
  app.require_subcommand(1);
  kj::app::eval_args eval_args;
  auto* eval_cmd = kj::app::add_eval_command(app, eval_args);
  auto* version_cmd = app.add_subcommand("version", "versions");
  kj::app::specs_args specs_args;
  auto* specs_cmd = kj::app::add_specs_command(app, specs_args);
  kj::app::eval_args profile_args;
  auto* profile_cmd = kj::app::add_profile_command(app, profile_args);
  kj::app::roofline_args roofline_args;
  auto* roofline_cmd = kj::app::add_roofline_command(app, roofline_args);
  kj::app::cache_args cache_args;
  auto* cache_cmd = kj::app::add_cache_command(app, cache_args);
  kj::app::pool_args pool_args;
  auto* pool_cmd = kj::app::add_pool_command(app, pool_args);
  // A word that names no command: said as such (CLI11 asks for a subcommand and points at
  // "kjudge <word> --help", which fails too).
  if (argv[1][0] != '-') {
    const std::string word = argv[1];
    const auto& commands = std::as_const(app);
    if (commands.get_subcommands([&](const CLI::App* c) { return c->check_name(word); }).empty()) {
      std::string names;
      for (const CLI::App* c : commands.get_subcommands([](const CLI::App*) { return true; }))
        names += (names.empty() ? "" : ", ") + c->get_name();
      std::fprintf(stderr, "kjudge: unknown command '%s' (commands: %s; see kjudge --help)\n",
                   kj::terminal_safe_line(word).c_str(), names.c_str());
      return kj::exit_code::usage;
    }
  }
  if (const std::string empty = empty_assignment_text(app, argc, argv); !empty.empty()) {
    std::fprintf(stderr, "kjudge: %s\n(see kjudge %s--help)\n", kj::terminal_safe(empty).c_str(),
                 command.empty() ? "" : (command + " ").c_str());
    return kj::exit_code::usage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success&) {
    std::printf("kjudge %s (%s)\n", KJ_VERSION, kj::source_commit());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string text = unexpected_text(app, argc, argv);
    if (text.empty()) text = parse_error_text(e);
    std::fprintf(stderr, "kjudge: %s\n(see kjudge %s--help)\n", kj::terminal_safe(text).c_str(),
                 command.empty() ? "" : (command + " ").c_str());
    return kj::exit_code::usage;
  }
  try {
    if (eval_cmd->parsed()) return kj::app::run_eval(eval_args);
    if (version_cmd->parsed()) return kj::app::run_version();
    if (specs_cmd->parsed()) return kj::app::run_specs(specs_args);
    if (roofline_cmd->parsed()) return kj::app::run_roofline(roofline_args);
    if (profile_cmd->parsed()) return kj::app::run_profile(profile_args);
    if (cache_cmd->parsed()) return kj::app::run_cache(cache_args);
    if (pool_cmd->parsed()) return kj::app::run_pool(pool_args);
  } catch (const kj::error& e) {
    std::fprintf(stderr, "kjudge: %s\n", kj::terminal_safe(e.message()).c_str());
    return e.kind() == kj::error_kind::usage ? kj::exit_code::usage : kj::exit_code::internal_error;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kjudge: internal error: %s\n", kj::terminal_safe(e.what()).c_str());
    return kj::exit_code::internal_error;
  }
  return kj::exit_code::usage;
}
