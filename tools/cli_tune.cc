#include "tools/cli_tune.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autotune/database.h"
#include "autotune/task.h"
#include "autotune/tuner.h"
#include "driver/build.h"
#include "driver/model_check.h"
#include "runtime/error.h"
#include "targets/target.h"
#include "tools/cli_options.h"

namespace tessera::cli {

namespace {

struct TuneArgs {
  ModelOptions model;
  autotune::TuneOptions options;
  double timeout = 0;
  bool model_check = true;
};

struct DbArgs {
  std::string db, workload, file;
  int keep = 1;
};

TuneArgs tune_args;
DbArgs db_args;
CLI::App *tune_cmd, *db_cmd, *db_list, *db_show, *db_export, *db_import, *db_prune;

// Ctrl-C stops the session after the batch in flight (committed, so a later session resumes
// from it); a second Ctrl-C kills at once.
volatile std::sig_atomic_t interrupted = 0;
struct Interrupted {};
void on_sigint(int) {
  interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

int cmd_tune(TuneArgs& a) {
  a.options.target = a.model.target;
  a.options.db_path = db_path(a.model.db);
  a.options.max_seconds = a.timeout;
  if (a.options.report_path.empty()) a.options.report_path = autotune::default_report_path(a.options.db_path);

  targets::Target target = targets::Target::parse(a.model.target);
  schedule::HardwareParams hardware = target.hardware();
  auto tasks = autotune::extract_tasks(driver::optimize(load(a.model), hardware, a.model.opt_level), hardware);
  std::fprintf(stderr, "tuning %zu tasks of %s for %s, %d trials, database %s\n", tasks.size(), a.model.model.c_str(),
               a.model.target.c_str(), a.options.trials, a.options.db_path.c_str());
  bool tty = isatty(STDERR_FILENO);
  auto progress = [&](const autotune::Progress& p) {
    std::string line = autotune::progress_line(p);
    if (tty)
      std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
    else
      std::fprintf(stderr, "%s\n", line.c_str());
    if (interrupted) throw Interrupted{};
  };
  std::signal(SIGINT, on_sigint);
  autotune::TuneResult r;
  try {
    r = autotune::tune(tasks, a.options, progress);
  } catch (const Interrupted&) {
    std::fprintf(stderr, "\ninterrupted: every measured batch is in %s; run again to resume. Report: %s\n",
                 a.options.db_path.c_str(), a.options.report_path.c_str());
    return 130;
  }
  std::signal(SIGINT, SIG_DFL);
  if (tty) std::fprintf(stderr, "\n");
  std::printf("%-40s %6s %7s %11s %11s %8s %9s\n", "task", "weight", "trials", "default ms", "best ms", "speedup", "GFLOP/s");
  for (const auto& s : r.tasks) {
    double best = s.best_seconds > 0 ? s.best_seconds : s.default_seconds;
    std::printf("%-40.40s %6d %7d %11.4f %11.4f %7.2fx %9.1f\n", s.description.c_str(), s.weight, s.trials, s.default_seconds * 1e3,
                best * 1e3, best > 0 ? s.default_seconds / best : 0.0, s.gflops());
  }
  std::printf("estimated latency %.3f ms (default schedules %.3f ms) after %.0f s\nreport: %s\n", r.estimated_latency * 1e3,
              r.default_latency * 1e3, r.wall_seconds, r.report_path.c_str());
  if (a.model_check) {
    auto check = driver::check_in_model(load(a.model), target, a.model.opt_level, a.options.db_path);
    std::printf("%s", driver::format_model_check(check).c_str());
  }
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
    if (!key.empty() && key != s.workload.key) fail("workload prefix '", a.workload, "' is ambiguous: ", key, ", ", s.workload.key);
    key = s.workload.key;
  }
  auto w = key.empty() ? std::nullopt : db.workload(key);
  if (!w) fail("no workload '", a.workload, "' in ", db.path());
  std::printf("workload  %s\nstructure %s\n%s\n\n%s\n", w->key.c_str(), w->structure_key.c_str(), w->description.c_str(),
              w->definition.c_str());
  for (const auto& s : db.summaries()) {
    if (s.workload.key != key) continue;
    std::printf("\ntarget %s\n%8s %-13s %11s %11s %-19s %s\n", s.target.c_str(), "record", "policy", "min ms", "median ms", "created",
                "error");
    for (const auto& r : db.all(key, s.target)) {
      bool ok = r.error.empty();
      std::printf("%8lld %-13s %11s %11s %-19s %s\n", static_cast<long long>(r.id), r.policy.c_str(),
                  ok ? std::to_string(r.min_seconds() * 1e3).c_str() : "-", ok ? std::to_string(r.median_seconds() * 1e3).c_str() : "-",
                  format_time(r.created).c_str(), r.error.substr(0, r.error.find('\n')).c_str());
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
  std::printf("imported %lld records from %s into %s\n", static_cast<long long>(db.import_jsonl(text.str())), a.file.c_str(),
              path.c_str());
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
  tune_cmd = app.add_subcommand("tune", "search schedules for every kernel of a model and store them in the tuning database");
  add_model_options(tune_cmd, t.model);
  tune_cmd->add_option("--trials", t.options.trials, "measurements in all, across the model's kernels");
  tune_cmd->add_option("--batch", t.options.batch, "candidates measured per batch (one transaction each)");
  tune_cmd->add_option("--policy", t.options.policy, "search policy: evolutionary (cost-model guided) or random");
  tune_cmd->add_option("--early-stopping", t.options.early_stopping, "stop a kernel after this many trials without improvement");
  tune_cmd->add_option("--timeout", t.timeout, "stop the session after this many seconds");
  tune_cmd->add_option("--seed", t.options.seed, "random seed of the search");
  tune_cmd->add_option("--repeat", t.options.measure.repeat, "timed runs per candidate");
  tune_cmd->add_flag("--flush-cache", t.options.measure.flush_cache, "flush the caches before each timed run");
  tune_cmd->add_flag("!--warm-inputs", t.options.measure.fresh_inputs,
                     "time kernels on inputs left in the caches by the previous call, not rewritten before each call as in a model");
  tune_cmd->add_flag("!--no-model-check", t.model_check,
                     "keep every kernel's fastest schedule timed alone, without timing it in the model against its default");
  tune_cmd->add_option("--report", t.options.report_path, "the HTML report (default: NAME.report.html beside the database NAME.db)");

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
  db_prune = db_cmd->add_subcommand("prune", "keep the fastest valid records of each workload and target, drop the rest");
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
