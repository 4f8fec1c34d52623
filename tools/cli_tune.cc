#include "tools/cli_tune.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autotune/database.h"
#include "autotune/tuner.h"
#include "driver/tune_model.h"
#include "runtime/error.h"
#include "tools/cli_options.h"

namespace tessera::cli {

namespace {

struct TuneArgs {
  ModelOptions model;
  driver::TuneModelOptions options;
  double timeout = 0;  // --timeout, when given
};

struct DbArgs {
  std::string db, workload, file;
  int keep = 1;
};

TuneArgs tune_args;
DbArgs db_args;
CLI::Option* timeout_option;
CLI::App *tune_cmd, *db_cmd, *db_list, *db_show, *db_export, *db_import, *db_prune;

// Ctrl-C stops the session after the batch in flight (committed, so a later session resumes
// from it); a second Ctrl-C kills at once.
volatile std::sig_atomic_t interrupted = 0;
struct Interrupted {};
void on_sigint(int) {
  interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

// Columns of the terminal stderr writes to; 0 where it is not a terminal.
int terminal_columns() {
  if (!isatty(STDERR_FILENO)) return 0;
  winsize w{};
  return ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0 ? w.ws_col : 80;
}

// "t.report.html" -> "t.report.2.html": the report of the second of several sizes.
std::string numbered(const std::string& path, size_t k) {
  const size_t dot = path.rfind('.');
  const bool has_extension = dot != std::string::npos && path.find('/', dot) == std::string::npos;
  return has_extension ? path.substr(0, dot) + "." + std::to_string(k) + path.substr(dot)
                       : path + "." + std::to_string(k);
}

int cmd_tune(TuneArgs& a) {
  autotune::TuneOptions& o = a.options.tune;
  o.target = a.model.target;
  o.db_path = db_path(a.model.db);
  if (timeout_option->count()) o.max_seconds = a.timeout;
  if (o.report_path.empty()) o.report_path = autotune::default_report_path(o.db_path);
  a.options.opt_level = a.model.opt_level;
  driver::validate(a.options);  // before the model is loaded: a wrong option is quicker to hear about

  // Several --shape values of an input (a model of symbolic sizes): a session per size, sharing
  // the trials and the time.
  const std::vector<std::pair<std::string, relay_ir::Module>> sizes = load_sizes(a.model);
  const int per_size_trials = std::max(1, o.trials / static_cast<int>(sizes.size()));
  if (timeout_option->count()) o.max_seconds = a.timeout / static_cast<double>(sizes.size());
  int columns = terminal_columns();
  std::signal(SIGINT, on_sigint);
  for (size_t k = 0; k < sizes.size(); ++k) {
    const std::string& size = sizes[k].first;  // not a structured binding: the lambda below reads it
    const relay_ir::Module& module = sizes[k].second;
    driver::TuneModelOptions options = a.options;
    options.tune.trials = per_size_trials;
    if (sizes.size() > 1) options.tune.report_path = numbered(o.report_path, k + 1);  // a report per size
    bool opened = false;
    auto progress = [&](const autotune::Progress& p) {
      if (!opened) {
        std::fprintf(stderr, "tuning %zu tasks of %s%s%s for %s, %d trials, database %s\n", p.tasks->size(),
                     a.model.model.c_str(), sizes.size() > 1 ? " at " : "", sizes.size() > 1 ? size.c_str() : "",
                     o.target.c_str(), options.tune.trials, o.db_path.c_str());
        opened = true;
      }
      std::fputs(driver::progress_text(autotune::progress_line(p), columns).c_str(), stderr);
      if (interrupted) throw Interrupted{};
    };
    driver::TuneReport report;
    try {
      report = driver::tune_model(module, options, progress);
    } catch (const Interrupted&) {
      std::fprintf(stderr, "\ninterrupted: every measured batch is in %s; run again to resume. Report: %s\n",
                   o.db_path.c_str(), options.tune.report_path.c_str());
      return 130;
    }
    if (columns > 0) std::fprintf(stderr, "\n");
    if (sizes.size() > 1) std::printf("== %s\n", size.c_str());
    std::printf("%s", driver::format_tune_report(report).c_str());
  }
  std::signal(SIGINT, SIG_DFL);
  return 0;
}

std::string format_time(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
  return buf;
}

// Opens an existing database: the db commands never create one.
autotune::TuningDatabase open_db(const std::string& db) {
  std::string path = db_path(db);
  if (!std::filesystem::exists(path)) fail("no tuning database at ", path);
  return autotune::TuningDatabase(path);
}

int cmd_db_list(const DbArgs& a) {
  auto db = open_db(a.db);
  std::printf("%-16s %-44s %8s %7s %11s  %s\n", "workload", "description", "records", "errors", "best ms", "target");
  for (const auto& s : db.summaries())
    std::printf("%-16.16s %-44.44s %8lld %7lld %11s  %s\n", s.workload.key.c_str(), s.workload.description.c_str(),
                static_cast<long long>(s.records), static_cast<long long>(s.errors),
                s.best_seconds > 0 ? std::to_string(s.best_seconds * 1e3).c_str() : "-", s.target.c_str());
  return 0;
}

// `workload` may be a unique prefix of a key (list prints 16 characters).
int cmd_db_show(const DbArgs& a) {
  auto db = open_db(a.db);
  std::string key;
  for (const auto& s : db.summaries()) {
    if (s.workload.key.compare(0, a.workload.size(), a.workload) != 0) continue;
    if (!key.empty() && key != s.workload.key)
      fail("workload prefix '", a.workload, "' is ambiguous: ", key, ", ", s.workload.key);
    key = s.workload.key;
  }
  auto w = key.empty() ? std::nullopt : db.workload(key);
  if (!w) fail("no workload '", a.workload, "' in ", db.path());
  std::printf("workload  %s\nstructure %s\n%s\n\n%s\n", w->key.c_str(), w->structure_key.c_str(),
              w->description.c_str(), w->definition.c_str());
  for (const auto& s : db.summaries()) {
    if (s.workload.key != key) continue;
    std::printf("\ntarget %s\n%8s %-13s %11s %11s %-19s %s\n", s.target.c_str(), "record", "policy", "min ms",
                "median ms", "created", "error");
    for (const auto& r : db.all(key, s.target)) {
      bool ok = r.error.empty();
      std::printf("%8lld %-13s %11s %11s %-19s %s\n", static_cast<long long>(r.id), r.found_by().c_str(),
                  ok ? std::to_string(r.min_seconds() * 1e3).c_str() : "-",
                  ok ? std::to_string(r.median_seconds() * 1e3).c_str() : "-", format_time(r.created).c_str(),
                  r.error.substr(0, r.error.find('\n')).c_str());
    }
  }
  return 0;
}

int cmd_db_export(const DbArgs& a) {
  auto db = open_db(a.db);
  std::string text = db.export_jsonl();
  std::ofstream out(a.file, std::ios::binary);
  out << text;
  if (!out) fail("cannot write ", a.file);
  std::printf("exported %s to %s\n", db.path().c_str(), a.file.c_str());
  return 0;
}

int cmd_db_import(const DbArgs& a) {
  std::ifstream in(a.file, std::ios::binary);
  if (!in) fail("cannot read ", a.file);
  std::stringstream text;
  text << in.rdbuf();
  std::string path = db_path(a.db);
  autotune::TuningDatabase db(path);  // created, with its folder, if need be
  std::printf("imported %lld records from %s into %s\n", static_cast<long long>(db.import_jsonl(text.str())),
              a.file.c_str(), path.c_str());
  return 0;
}

int cmd_db_prune(const DbArgs& a) {
  if (a.keep < 1) fail("db prune: --keep must be at least 1");
  auto db = open_db(a.db);
  std::printf("removed %lld records from %s\n", static_cast<long long>(db.prune(a.keep)), db.path().c_str());
  return 0;
}

}  // namespace

void add_tuning_commands(CLI::App& app) {
  TuneArgs& t = tune_args;
  tune_cmd =
      app.add_subcommand("tune", "search schedules for every kernel of a model and store them in the tuning database");
  add_model_options(tune_cmd, t.model);
  autotune::TuneOptions& o = t.options.tune;
  tune_cmd->add_option("--trials", o.trials,
                       "measurements in all, across the model's kernels (and its sizes: a model of symbolic sizes is "
                       "tuned at each size given by repeating --shape for an input, e.g. --shape x=1,128 --shape "
                       "x=1,512)");
  tune_cmd->add_option("--batch", o.batch, "candidates measured per batch (one transaction each)");
  tune_cmd->add_option("--policy", o.policy, "search policy: evolutionary (cost-model guided) or random");
  tune_cmd->add_option("--early-stopping", o.early_stopping,
                       "stop a kernel after this many trials without improvement");
  timeout_option =
      tune_cmd->add_option("--timeout", t.timeout, "stop the session after this many seconds (default: no limit)");
  tune_cmd->add_option("--seed", o.seed, "random seed of the search");
  tune_cmd->add_option("--repeat", o.measure.repeat, "timed runs per candidate");
  tune_cmd->add_flag("--flush-cache", o.measure.flush_cache, "flush the caches before each timed run");
  tune_cmd->add_flag(
      "!--warm-inputs", o.measure.fresh_inputs,
      "time kernels on inputs left in the caches by the previous call, not rewritten before each call as in a model");
  tune_cmd->add_flag(
      "!--no-model-check", t.options.model_check,
      "keep every kernel's fastest schedule timed alone, without timing it in the model against its default");
  tune_cmd->add_option("--report", o.report_path,
                       "the HTML report (default: NAME.report.html beside the database NAME.db)");

  DbArgs& d = db_args;
  db_cmd = app.add_subcommand("db", "list, show, export, import or prune the tuning database");
  db_cmd->require_subcommand(1);
  db_cmd->add_option("--db", d.db, "tuning database (default: $TESSERA_DB or ~/.cache/tessera/tuning.db)");
  db_cmd->fallthrough();  // --db also after the action: `tessera db list --db X`
  db_list = db_cmd->add_subcommand("list", "one line per workload and target: records, errors, best time");
  db_show = db_cmd->add_subcommand("show", "a workload's definition and all its records");
  db_show->add_option("workload", d.workload, "workload key (or a unique prefix)")->required();
  db_export = db_cmd->add_subcommand("export", "write every workload and record as JSON lines");
  db_export->add_option("file", d.file, "output file (.jsonl)")->required();
  db_import = db_cmd->add_subcommand("import", "add the workloads and records of a JSON-lines export");
  db_import->add_option("file", d.file, "a file written by db export")->required()->check(CLI::ExistingFile);
  db_prune =
      db_cmd->add_subcommand("prune", "keep the fastest valid records of each workload and target, drop the rest");
  db_prune->add_option("--keep", d.keep, "records kept per workload and target");
}

int run_tuning_commands() {
  if (*tune_cmd) return cmd_tune(tune_args);
  if (*db_list) return cmd_db_list(db_args);
  if (*db_show) return cmd_db_show(db_args);
  if (*db_export) return cmd_db_export(db_args);
  if (*db_import) return cmd_db_import(db_args);
  if (*db_prune) return cmd_db_prune(db_args);
  return -1;
}

}  // namespace tessera::cli
