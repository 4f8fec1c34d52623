// The tuning database: lookups filtered by target and version, kinds and decisions, transactions,
// concurrent writers, interrupted sessions, JSON-lines export/import, pruning, the migration of
// files of schema version 1, and clear errors for bad files.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "autotune/database.h"
#include "runtime/error.h"
#include "temp_dir.h"

namespace tessera::autotune {
namespace {

std::string temp_path(const std::string& name) {
  auto p = tessera::testing::test_temp_dir() / name;
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-wal");
  std::filesystem::remove(p.string() + "-shm");
  return p.string();
}

WorkloadEntry workload(const std::string& key, const std::string& structure = "s") {
  return {key, structure, "desc " + key, "def"};
}

Record record(const std::string& w, const std::string& target, double seconds, const std::string& error = "") {
  Record r;
  r.workload = w;
  r.target = target;
  r.trace = R"([{"kind":"split","stage":"C","loops":["i"],"attrs":{"factor":8},"outputs":["i.outer","i.inner"]}])";
  if (error.empty()) r.costs = {seconds * 1.1, seconds, seconds * 1.2};
  r.error = error;
  r.policy = "test";
  return r;
}

TEST(TuningDatabase, BestFiltersByTargetVersionAndErrors) {
  TuningDatabase db(temp_path("best.db"));
  db.add_workload(workload("w1"));
  Record old_format = record("w1", "llvm", 0.001);
  old_format.trace_format = kTraceFormatVersion - 1;  // written by an incompatible version
  db.commit({record("w1", "llvm", 0.005), record("w1", "llvm", 0.003), record("w1", "llvm", 0, "crashed: SIGSEGV"),
             record("w1", "llvm -mcpu=znver3", 0.002), old_format});
  auto best = db.best("w1", "llvm");
  ASSERT_TRUE(best);
  EXPECT_DOUBLE_EQ(best->median_seconds(), 0.0033);
  EXPECT_EQ(db.top("w1", "llvm", 10).size(), 2u);
  EXPECT_FALSE(db.best("w1", "cuda"));  // a miss is a miss
  EXPECT_FALSE(db.best("w2", "llvm"));
  EXPECT_EQ(db.all("w1", "llvm").size(), 4u);
}

TEST(TuningDatabase, SimilarWorkloadsShareAStructure) {
  TuningDatabase db(temp_path("similar.db"));
  db.add_workload(workload("a", "conv3x3"));
  db.add_workload(workload("b", "conv3x3"));
  db.add_workload(workload("c", "matmul"));
  db.commit(
      {record("a", "llvm", 0.004), record("a", "llvm", 0.002), record("b", "llvm", 0.003), record("c", "llvm", 0.001)});
  auto sim = db.similar("conv3x3", "b", "llvm", 5);
  ASSERT_EQ(sim.size(), 1u);  // a's best only, not b itself, not c
  EXPECT_EQ(sim[0].workload, "a");
  EXPECT_DOUBLE_EQ(sim[0].median_seconds(), 0.0022);
}

TEST(TuningDatabase, ExportImportAndPrune) {
  TuningDatabase db(temp_path("export.db"));
  db.add_workload(workload("w"));
  db.commit({record("w", "llvm", 0.004), record("w", "llvm", 0.002), record("w", "llvm", 0.003),
             record("w", "llvm", 0, "timeout")});
  std::string text = db.export_jsonl();
  TuningDatabase copy(temp_path("import.db"));
  EXPECT_EQ(copy.import_jsonl(text), 4);
  EXPECT_EQ(copy.export_jsonl().size(), text.size());
  EXPECT_DOUBLE_EQ(copy.best("w", "llvm")->median_seconds(), 0.0022);
  EXPECT_EQ(copy.prune(1), 3);
  EXPECT_EQ(copy.all("w", "llvm").size(), 1u);
  // A malformed line adds nothing and names the line.
  TuningDatabase other(temp_path("bad_import.db"));
  try {
    other.import_jsonl(text + "{\"record\": {\"workload\": 3}}\n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 6"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(other.summaries().empty());
}

Record timed(const std::string& trace, RecordKind kind, double seconds) {
  Record r = record("w", "llvm", seconds);
  r.trace = trace;
  r.kind = kind;
  r.policy = kind == RecordKind::Tuned ? "evolutionary" : "";
  return r;
}

TEST(TuningDatabase, BuildsUseWhatTheModelCheckChose) {
  TuningDatabase db(temp_path("chosen.db"));
  db.add_workload(workload("w"));
  db.commit({timed("[]", RecordKind::Default, 0.004), timed("[1]", RecordKind::Tuned, 0.003)});
  EXPECT_EQ(db.chosen("w", "llvm")->trace, "[1]");  // nothing timed in a model: the fastest alone
  // The model check timed both in the model, where the default ran faster. In-model times are
  // never compared with times taken alone: the default's 1 ms there does not make it best().
  db.commit({timed("[]", RecordKind::InModel, 0.001), timed("[1]", RecordKind::InModel, 0.002)});
  EXPECT_EQ(db.best("w", "llvm")->trace, "[1]");
  EXPECT_DOUBLE_EQ(db.best("w", "llvm")->median_seconds(), 0.0033);
  EXPECT_DOUBLE_EQ(db.summaries()[0].best_seconds, 0.0033);
  EXPECT_EQ(db.find("w", "llvm", "[]")->kind, RecordKind::Default);
  EXPECT_NE(db.similar("s", "other", "llvm", 5)[0].kind, RecordKind::InModel);
  auto chosen = db.chosen("w", "llvm");
  EXPECT_EQ(chosen->trace, "[]");
  EXPECT_EQ(chosen->kind, RecordKind::InModel);
  // Timed alone again (a later session re-times its best): the verdict stands.
  db.commit({timed("[1]", RecordKind::Tuned, 0.003)});
  EXPECT_EQ(db.chosen("w", "llvm")->trace, "[]");
  // A faster schedule found alone is used until a model check times it in turn.
  db.commit({timed("[2]", RecordKind::Tuned, 0.002)});
  EXPECT_EQ(db.chosen("w", "llvm")->trace, "[2]");
  db.commit({timed("[]", RecordKind::InModel, 0.0012), timed("[2]", RecordKind::InModel, 0.001)});
  EXPECT_EQ(db.chosen("w", "llvm")->trace, "[2]");
  EXPECT_EQ(db.chosen("w", "llvm")->kind, RecordKind::Tuned);
  // Pruning keeps the fastest records timed alone and the latest in-model record of each trace.
  db.prune(1);
  std::vector<std::string> kept;
  for (const auto& r : db.all("w", "llvm")) kept.push_back(r.trace + " " + r.found_by());
  EXPECT_EQ(kept, (std::vector<std::string>{"[1] in-model", "[2] evolutionary", "[] in-model", "[2] in-model"}));
}

TEST(TuningDatabase, RecordsKeepTheirKindPolicyAndDecisions) {
  TuningDatabase db(temp_path("decisions.db"));
  db.add_workload(workload("w"));
  Record tuned = timed("[1]", RecordKind::Tuned, 0.002);
  tuned.decisions = SketchDecisions{"matmul_out:tile", {4, 2, 1, 16}};
  Record knobs = timed("[2]", RecordKind::Tuned, 0.003);
  knobs.decisions = SketchDecisions{"default", {}};  // a sketch that takes no decisions
  db.commit({timed("[]", RecordKind::Default, 0.004), tuned, knobs, timed("[3]", RecordKind::Transfer, 0.005),
             timed("[4]", RecordKind::Custom, 0.006)});
  auto check = [&](const TuningDatabase& d) {
    auto all = d.all("w", "llvm");
    ASSERT_EQ(all.size(), 5u);
    std::vector<RecordKind> kinds;
    for (const auto& r : all) kinds.push_back(r.kind);
    EXPECT_EQ(kinds, (std::vector<RecordKind>{RecordKind::Default, RecordKind::Tuned, RecordKind::Tuned,
                                              RecordKind::Transfer, RecordKind::Custom}));
    EXPECT_EQ(all[0].found_by(), "default");
    EXPECT_EQ(all[1].found_by(), "evolutionary");
    EXPECT_FALSE(all[0].decisions.has_value());
    EXPECT_EQ(all[1].decisions, tuned.decisions);
    EXPECT_EQ(all[2].decisions, knobs.decisions);
    EXPECT_EQ(d.best("w", "llvm")->decisions, tuned.decisions);
    EXPECT_EQ(d.baseline("w", "llvm")->trace, "[]");
  };
  check(db);
  // Export and import carry them.
  std::string text = db.export_jsonl();
  EXPECT_NE(text.find(R"("kind":"transfer")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("decisions":[4,2,1,16])"), std::string::npos) << text;
  TuningDatabase copy(temp_path("decisions_copy.db"));
  EXPECT_EQ(copy.import_jsonl(text), 5);
  check(copy);
  EXPECT_EQ(copy.export_jsonl(), text);
  // An unknown kind is a malformed line.
  std::string bad = text.substr(0, text.find('\n') + 1) +
                    R"({"record": {"workload": "w", "target": "llvm", "trace": [],)"
                    R"( "costs": [0.001], "kind": "guessed"}})"
                    "\n";
  try {
    TuningDatabase(temp_path("decisions_bad.db")).import_jsonl(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("guessed"), std::string::npos) << e.what();
  }
}

// Files exported by the version that stored kinds in the policy string still import.
TEST(TuningDatabase, ImportsAnExportOfSchemaVersionOne) {
  std::string trace =
      R"([{"attrs":{"factor":8},"kind":"split","loops":["i"],"outputs":["i.outer","i.inner"],"stage":"C"}])";
  std::string old_export =
      R"({"workload":{"definition":"def","description":"desc w","key":"w","structure_key":"s"}})"
      "\n"
      R"({"record":{"costs":[0.004],"created":1.0,"error":"","policy":"default","target":"llvm","tessera_version":"0.1.0","trace":[],"trace_format":2,"workload":"w"}})"
      "\n"
      R"({"record":{"costs":[0.002],"created":2.0,"error":"","policy":"evolutionary","target":"llvm","tessera_version":"0.1.0","trace":)" +
      trace +
      R"(,"trace_format":2,"workload":"w"}})"
      "\n"
      R"({"record":{"costs":[0.001],"created":3.0,"error":"","policy":"in-model","target":"llvm","tessera_version":"0.1.0","trace":[],"trace_format":2,"workload":"w"}})"
      "\n"
      R"({"record":{"costs":[0.003],"target":"llvm","trace":[],"trace_format":2,"workload":"w"}})"
      "\n";
  TuningDatabase db(temp_path("old_export.db"));
  EXPECT_EQ(db.import_jsonl(old_export), 4);
  auto all = db.all("w", "llvm");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].kind, RecordKind::Default);
  EXPECT_EQ(all[0].policy, "");
  EXPECT_EQ(all[1].kind, RecordKind::Tuned);
  EXPECT_EQ(all[1].policy, "evolutionary");
  EXPECT_EQ(all[2].kind, RecordKind::InModel);
  EXPECT_EQ(all[3].kind, RecordKind::Tuned);
  EXPECT_EQ(all[3].policy, "import");
  for (const auto& r : all) EXPECT_FALSE(r.decisions.has_value());
  EXPECT_EQ(db.best("w", "llvm")->id, all[1].id);
  EXPECT_EQ(db.baseline("w", "llvm")->id, all[0].id);
}

// SQL run on a file outside TuningDatabase (a file of another version, or damaged).
void run_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  std::string m = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << m;
}

// The first column of each row of a query, as text.
std::vector<std::string> query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::vector<std::string> out;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (s && sqlite3_step(s) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(s, 0);
    out.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

// The schema of version 1, as Tessera wrote it before kinds and decisions had columns.
const char* kVersion1Schema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE workloads(
  key TEXT PRIMARY KEY, structure_key TEXT NOT NULL, description TEXT NOT NULL, definition TEXT NOT NULL);
CREATE TABLE records(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workload TEXT NOT NULL REFERENCES workloads(key),
  target TEXT NOT NULL,
  trace TEXT NOT NULL,
  costs TEXT NOT NULL,
  median_seconds REAL,
  error TEXT NOT NULL,
  policy TEXT NOT NULL,
  tessera_version TEXT NOT NULL,
  trace_format INTEGER NOT NULL,
  created REAL NOT NULL);
CREATE INDEX records_by_workload ON records(workload, target, median_seconds);
CREATE INDEX workloads_by_structure ON workloads(structure_key);
INSERT INTO meta VALUES ('schema_version', '1');
)sql";

// A version-1 file: two workloads of one structure; w's default, two searched schedules, a custom
// one, the model check's verdict (the default faster in the model) and an error; v's transfer.
std::string version1_file(const std::string& name) {
  std::string path = temp_path(name);
  std::string rows = std::string(kVersion1Schema) + R"sql(
INSERT INTO workloads VALUES ('w', 's', 'desc w', 'def'), ('v', 's', 'desc v', 'def');
INSERT INTO records(workload, target, trace, costs, median_seconds, error, policy, tessera_version, trace_format, created) VALUES
  ('w', 'llvm', '[]', '[0.004]', 0.004, '', 'default', '0.1.0', 2, 1),
  ('w', 'llvm', '[1]', '[0.002]', 0.002, '', 'evolutionary', '0.1.0', 2, 2),
  ('w', 'llvm', '[2]', '[0.003]', 0.003, '', 'random', '0.1.0', 2, 3),
  ('w', 'llvm', '[3]', '[0.005]', 0.005, '', 'custom', '0.1.0', 2, 4),
  ('w', 'llvm', '[]', '[0.001]', 0.001, '', 'in-model', '0.1.0', 2, 5),
  ('w', 'llvm', '[1]', '[0.0015]', 0.0015, '', 'in-model', '0.1.0', 2, 6),
  ('w', 'llvm', '[4]', '[]', NULL, 'timeout', 'evolutionary', '0.1.0', 2, 7),
  ('v', 'llvm', '[5]', '[0.007]', 0.007, '', 'transfer', '0.1.0', 2, 8);
)sql";
  run_sql(path, rows);
  return path;
}

TEST(TuningDatabase, MigratesAFileOfSchemaVersionOne) {
  std::string path = version1_file("v1.db");
  {
    TuningDatabase db(path);
    auto all = db.all("w", "llvm");
    ASSERT_EQ(all.size(), 7u);
    std::vector<std::string> kinds;
    for (const auto& r : all) kinds.push_back(std::string(record_kind_name(r.kind)) + " " + r.policy);
    EXPECT_EQ(kinds, (std::vector<std::string>{"default ", "tuned evolutionary", "tuned random", "custom ", "in-model ",
                                               "in-model ", "tuned evolutionary"}));
    for (const auto& r : all) EXPECT_FALSE(r.decisions.has_value());
    EXPECT_EQ(db.all("v", "llvm")[0].kind, RecordKind::Transfer);
    // The lookups answer as version 1 did: in-model times are not compared with times alone.
    EXPECT_EQ(db.best("w", "llvm")->id, 2);
    std::vector<int64_t> top;
    for (const auto& r : db.top("w", "llvm", 10)) top.push_back(r.id);
    EXPECT_EQ(top, (std::vector<int64_t>{2, 3, 1, 4}));
    EXPECT_EQ(db.baseline("w", "llvm")->id, 1);
    EXPECT_EQ(db.find("w", "llvm", "[]")->id, 1);
    EXPECT_EQ(db.find_in_model("w", "llvm", "[1]")->id, 6);
    EXPECT_EQ(db.chosen("w", "llvm")->id, 5);  // the model check's verdict stands
    EXPECT_EQ(db.similar("s", "v", "llvm", 5)[0].id, 2);
    EXPECT_EQ(db.similar("s", "w", "llvm", 5)[0].id, 8);
    auto summaries = db.summaries();
    ASSERT_EQ(summaries.size(), 2u);
    EXPECT_DOUBLE_EQ(summaries[1].best_seconds, 0.002);  // "desc w" sorts second
    EXPECT_EQ(summaries[1].errors, 1);
    // New records take decisions at once.
    Record r = timed("[6]", RecordKind::Tuned, 0.0005);
    r.decisions = SketchDecisions{"matmul_out:tile", {8}};
    db.commit({r});
    EXPECT_EQ(db.best("w", "llvm")->decisions, r.decisions);
  }
  EXPECT_EQ(query(path, "SELECT value FROM meta WHERE key = 'schema_version'"), std::vector<std::string>{"2"});
  // The kind column keeps to the kinds.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(raw, "UPDATE records SET kind = 'guessed' WHERE id = 1", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  // Opened again: nothing left to migrate.
  EXPECT_EQ(TuningDatabase(path).all("w", "llvm").size(), 8u);
}

TEST(TuningDatabase, AFailedMigrationLeavesTheFileUnchanged) {
  // A version-1 file whose records lack the policy column the migration reads.
  std::string path = version1_file("v1_broken.db");
  run_sql(path, "ALTER TABLE records DROP COLUMN policy");
  std::vector<std::string> columns = query(path, "SELECT name FROM pragma_table_info('records')");
  try {
    TuningDatabase db(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("migrating"), std::string::npos) << e.what();
  }
  EXPECT_EQ(query(path, "SELECT name FROM pragma_table_info('records')"), columns);
  EXPECT_EQ(query(path, "SELECT value FROM meta WHERE key = 'schema_version'"), std::vector<std::string>{"1"});
  EXPECT_EQ(query(path, "SELECT COUNT(*) FROM records"), std::vector<std::string>{"8"});
}

TEST(TuningDatabase, ANewerSchemaIsRefused) {
  std::string path = temp_path("newer.db");
  { TuningDatabase db(path); }
  run_sql(path, "UPDATE meta SET value = '3' WHERE key = 'schema_version'");
  try {
    TuningDatabase db(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + " has schema version 3"), std::string::npos) << e.what();
  }
}

TEST(TuningDatabase, AMalformedRowNamesItsRecord) {
  std::string path = temp_path("malformed.db");
  TuningDatabase db(path);
  db.add_workload(workload("w"));
  Record r = timed("[1]", RecordKind::Tuned, 0.002);
  r.decisions = SketchDecisions{"matmul_out:tile", {8}};
  int64_t id = db.commit({r})[0];
  run_sql(path, "UPDATE records SET decisions = '[8,' WHERE id = " + std::to_string(id));
  for (auto lookup :
       {+[](const TuningDatabase& d) { d.all("w", "llvm"); }, +[](const TuningDatabase& d) { d.best("w", "llvm"); }}) {
    try {
      lookup(db);
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": record " + std::to_string(id) + " is malformed"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(TuningDatabase, NotADatabaseIsAClearError) {
  std::string path = temp_path("garbage.db");
  std::ofstream(path) << std::string(4096, 'x');
  try {
    TuningDatabase db(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, std::string(4096, 'x'));  // untouched
}

TEST(TuningDatabase, ConcurrentWritersAndAKilledSession) {
  std::string path = temp_path("concurrent.db");
  { TuningDatabase(path).add_workload(workload("w")); }
  // Two processes commit 50 batches each at once; a third is killed while committing.
  auto writer = [&](int batches, double base) {
    TuningDatabase db(path);
    for (int b = 0; b < batches; ++b)
      db.commit({record("w", "llvm", base + b * 1e-6), record("w", "llvm", base + b * 2e-6)});
  };
  pid_t a = fork();
  if (a == 0) {
    writer(50, 0.01);
    _exit(0);
  }
  pid_t b = fork();
  if (b == 0) {
    writer(50, 0.02);
    _exit(0);
  }
  pid_t killed = fork();
  if (killed == 0) {
    writer(1000000, 0.03);
    _exit(0);
  }
  usleep(300000);
  kill(killed, SIGKILL);
  int status;
  waitpid(a, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  waitpid(b, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  waitpid(killed, &status, 0);
  TuningDatabase db(path);
  auto records = db.all("w", "llvm");
  EXPECT_GE(records.size(), 200u);
  EXPECT_EQ(records.size() % 2, 0u);  // whole batches only
  EXPECT_DOUBLE_EQ(db.best("w", "llvm")->median_seconds(), 0.011);
}

TEST(TuningDatabase, ConcurrentWriterThreads) {
  // A tuning session measures in one process while builds read: each thread its own connection.
  // ThreadSanitizer runs this one (scripts/test.sh --sanitize=thread); the processes above it cannot see.
  std::string path = temp_path("threads.db");
  { TuningDatabase(path).add_workload(workload("w")); }
  auto writer = [&](double base) {
    TuningDatabase db(path);
    for (int b = 0; b < 30; ++b)
      db.commit({record("w", "llvm", base + b * 1e-6), record("w", "llvm", base + b * 2e-6)});
  };
  std::atomic<bool> writing{true};
  size_t last_seen = 0;
  std::thread reader([&] {
    TuningDatabase db(path);
    while (writing.load()) {
      size_t seen = db.all("w", "llvm").size();
      EXPECT_EQ(seen % 2, 0u);  // whole batches only
      last_seen = std::max(last_seen, seen);
    }
  });
  std::thread a(writer, 0.01), b(writer, 0.02);
  a.join();
  b.join();
  writing = false;
  reader.join();
  TuningDatabase db(path);
  EXPECT_EQ(db.all("w", "llvm").size(), 120u);
  EXPECT_LE(last_seen, 120u);
  EXPECT_DOUBLE_EQ(db.best("w", "llvm")->median_seconds(), 0.011);
}

}  // namespace
}  // namespace tessera::autotune
