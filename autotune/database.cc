#include "autotune/database.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/error.h"

#ifndef TESSERA_VERSION
#define TESSERA_VERSION "unknown"
#endif

namespace tessera::autotune {

using nlohmann::json;

namespace {

// 2: a record's kind in its own column (it was the policy string), and the sketch and decisions a
// search sampled it from (sketch NULL: none stored).
constexpr int kSchemaVersion = 2;

// The columns version 2 added, declared alike by a fresh file and by the migration of a version-1
// one. Kinds are stored by name, readable in any SQLite shell and equal to the policy strings of
// version 1 (the migration copies them over); the CHECK keeps the column an enum. A NOT NULL
// column added to a table needs a default: tuned, what version 1's other policies were.
std::string kind_column() {
  std::string names;
  for (RecordKind k : kAllRecordKinds) names += std::string(names.empty() ? "'" : ", '") + record_kind_name(k) + "'";
  return std::string("kind TEXT NOT NULL DEFAULT '") + record_kind_name(RecordKind::Tuned) + "' CHECK(kind IN (" +
         names + "))";
}
constexpr const char* kSketchColumn = "sketch TEXT";        // the sketch's name; NULL: no decisions stored
constexpr const char* kDecisionsColumn = "decisions TEXT";  // a JSON array of integers

std::string schema() {
  return R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workloads(
  key TEXT PRIMARY KEY, structure_key TEXT NOT NULL, description TEXT NOT NULL, definition TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records(
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
  created REAL NOT NULL,
  )sql" + kind_column() +
         ",\n  " + kSketchColumn + ",\n  " + kDecisionsColumn + R"sql();
CREATE INDEX IF NOT EXISTS records_by_workload ON records(workload, target, median_seconds);
CREATE INDEX IF NOT EXISTS workloads_by_structure ON workloads(structure_key);
)sql";
}

constexpr const char* kRecordColumns =
    "id, workload, target, trace, costs, error, kind, policy, sketch, decisions, tessera_version, trace_format, "
    "created";

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

double Record::min_seconds() const { return costs.empty() ? 0 : *std::min_element(costs.begin(), costs.end()); }

double median_of(std::vector<double> costs) {
  if (costs.empty()) return 0;
  std::nth_element(costs.begin(), costs.begin() + costs.size() / 2, costs.end());
  return costs[costs.size() / 2];
}

double Record::median_seconds() const { return median_of(costs); }

std::string Record::found_by() const {
  if (kind != RecordKind::Tuned) return record_kind_name(kind);
  return policy.empty() ? record_kind_name(kind) : policy;
}

// One prepared statement: binds, steps, reads columns, resets on destruction.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const std::string& sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) check(SQLITE_ERROR);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement& bind(int i, const std::string& s) {
    return check_bind(sqlite3_bind_text(stmt_, i, s.c_str(), -1, SQLITE_TRANSIENT));
  }
  Statement& bind(int i, double v) { return check_bind(sqlite3_bind_double(stmt_, i, v)); }
  Statement& bind(int i, int64_t v) { return check_bind(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind(int i, RecordKind k) { return bind(i, std::string(record_kind_name(k))); }
  Statement& bind_null(int i) { return check_bind(sqlite3_bind_null(stmt_, i)); }
  // True while there is a row.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) check(rc);
    return false;
  }
  std::string text(int c) const {
    const unsigned char* t = sqlite3_column_text(stmt_, c);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  bool is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  double real(int c) const { return sqlite3_column_double(stmt_, c); }
  int64_t integer(int c) const { return sqlite3_column_int64(stmt_, c); }

 private:
  Statement& check_bind(int rc) {
    if (rc != SQLITE_OK) check(rc);
    return *this;
  }
  void check(int rc) const { fail("tuning database ", path_, ": ", sqlite3_errmsg(db_), " (SQLite error ", rc, ")"); }
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
};

struct TuningDatabase::Impl {
  sqlite3* db = nullptr;
  std::string path;

  void exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      std::string m = message ? message : "unknown error";
      sqlite3_free(message);
      fail("tuning database ", path, ": ", m);
    }
  }
  Statement prepare(const std::string& sql) { return Statement(db, path, sql); }

  // Runs f inside one transaction (BEGIN IMMEDIATE: writers queue instead of failing midway).
  template <typename F>
  void transaction(F&& f) {
    exec("BEGIN IMMEDIATE");
    try {
      f();
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  // A row of kRecordColumns; throws naming the record if a column does not parse.
  Record read_record(const Statement& s) const {
    Record r;
    r.id = s.integer(0);
    r.workload = s.text(1);
    r.target = s.text(2);
    r.trace = s.text(3);
    r.error = s.text(5);
    r.policy = s.text(7);
    r.tessera_version = s.text(10);
    r.trace_format = static_cast<int>(s.integer(11));
    r.created = s.real(12);
    try {
      r.costs = json::parse(s.text(4)).get<std::vector<double>>();
      r.kind = parse_record_kind(s.text(6));
      if (!s.is_null(8)) r.decisions = SketchDecisions{s.text(8), json::parse(s.text(9)).get<Decisions>()};
    } catch (const std::exception& e) {
      fail("tuning database ", path, ": record ", r.id, " is malformed: ", e.what());
    }
    return r;
  }

  // The database's schema version; empty for a file Tessera has not set one in yet.
  std::string schema_version() {
    Statement get = prepare("SELECT value FROM meta WHERE key = 'schema_version'");
    return get.step() ? get.text(0) : "";
  }

  // Version 1 to 2, in the caller's transaction: the new columns, each record's kind from its
  // policy (whose name it was) and no decisions (a search does not seed from such records).
  void migrate_from_v1() {
    exec("ALTER TABLE records ADD COLUMN " + kind_column());
    exec(std::string("ALTER TABLE records ADD COLUMN ") + kSketchColumn);
    exec(std::string("ALTER TABLE records ADD COLUMN ") + kDecisionsColumn);
    for (RecordKind k : kAllRecordKinds)
      if (k != RecordKind::Tuned)
        prepare("UPDATE records SET kind = ?1, policy = '' WHERE policy = ?1").bind(1, k).step();
    prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").bind(1, std::to_string(kSchemaVersion)).step();
  }
};

std::string TuningDatabase::default_path() {
  if (const char* env = std::getenv("TESSERA_DB"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/tessera/tuning.db";
}

TuningDatabase::TuningDatabase(const std::string& path) : impl_(std::make_unique<Impl>()), path_(path) {
  impl_->path = path;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  if (sqlite3_open_v2(path.c_str(), &impl_->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string m = impl_->db ? sqlite3_errmsg(impl_->db) : "out of memory";
    sqlite3_close(impl_->db);
    impl_->db = nullptr;
    fail("cannot open tuning database ", path, ": ", m);
  }
  try {
    sqlite3_busy_timeout(impl_->db, 30000);  // another process committing: wait, do not fail
    impl_->exec("PRAGMA journal_mode=WAL");
    impl_->exec("PRAGMA synchronous=NORMAL");
    impl_->exec(schema());
    std::string version = impl_->schema_version();
    if (version == "1") {
      // Another process may migrate it first: checked again once this one holds the lock.
      try {
        impl_->transaction([&] {
          if (impl_->schema_version() == "1") impl_->migrate_from_v1();
        });
      } catch (const Error& e) {
        fail("migrating schema version 1 to ", kSchemaVersion, " failed, the file is unchanged: ", e.what());
      }
    } else if (version.empty()) {
      impl_->prepare("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)")
          .bind(1, std::to_string(kSchemaVersion))
          .step();
    } else if (version != std::to_string(kSchemaVersion)) {
      fail("tuning database ", path, " has schema version ", version, "; this Tessera reads version ", kSchemaVersion,
           " (and migrates version 1)");
    }
  } catch (const Error& e) {
    sqlite3_close(impl_->db);
    impl_->db = nullptr;
    fail(e.what(), " (is ", path, " a Tessera tuning database?)");
  }
}

std::unique_ptr<TuningDatabase> TuningDatabase::open_existing(const std::string& path) {
  if (!std::filesystem::exists(path)) return nullptr;
  return std::make_unique<TuningDatabase>(path);
}

TuningDatabase::~TuningDatabase() {
  if (impl_ && impl_->db) sqlite3_close(impl_->db);
}

void TuningDatabase::add_workload(const WorkloadEntry& w) {
  impl_->prepare("INSERT OR IGNORE INTO workloads(key, structure_key, description, definition) VALUES (?, ?, ?, ?)")
      .bind(1, w.key)
      .bind(2, w.structure_key)
      .bind(3, w.description)
      .bind(4, w.definition)
      .step();
}

std::optional<WorkloadEntry> TuningDatabase::workload(const std::string& key) const {
  Statement s = impl_->prepare("SELECT key, structure_key, description, definition FROM workloads WHERE key = ?");
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  return WorkloadEntry{s.text(0), s.text(1), s.text(2), s.text(3)};
}

std::vector<int64_t> TuningDatabase::commit(const std::vector<Record>& records) {
  std::vector<int64_t> ids;
  impl_->transaction([&] {
    for (const auto& r : records) {
      Statement s = impl_->prepare(
          "INSERT INTO records(workload, target, trace, costs, median_seconds, error, kind, policy, sketch, decisions,"
          " tessera_version, trace_format, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      s.bind(1, r.workload).bind(2, r.target).bind(3, r.trace).bind(4, json(r.costs).dump());
      if (r.error.empty() && !r.costs.empty()) s.bind(5, r.median_seconds());
      else s.bind_null(5);
      s.bind(6, r.error).bind(7, r.kind).bind(8, r.policy);
      if (r.decisions) s.bind(9, r.decisions->sketch).bind(10, json(r.decisions->values).dump());
      else s.bind_null(9).bind_null(10);
      s.bind(11, r.tessera_version.empty() ? std::string(TESSERA_VERSION) : r.tessera_version);
      s.bind(12, static_cast<int64_t>(r.trace_format)).bind(13, r.created ? r.created : now());
      s.step();
      ids.push_back(sqlite3_last_insert_rowid(impl_->db));
    }
  });
  return ids;
}

std::vector<Record> TuningDatabase::top(const std::string& workload, const std::string& target, int k) const {
  Statement s =
      impl_->prepare(std::string("SELECT ") + kRecordColumns +
                     " FROM records WHERE workload = ? AND target = ? AND error = '' AND median_seconds IS NOT NULL"
                     " AND trace_format = ? AND kind != ? ORDER BY median_seconds LIMIT ?");
  s.bind(1, workload)
      .bind(2, target)
      .bind(3, int64_t(kTraceFormatVersion))
      .bind(4, RecordKind::InModel)
      .bind(5, int64_t(k));
  std::vector<Record> out;
  while (s.step()) out.push_back(impl_->read_record(s));
  return out;
}

std::optional<Record> TuningDatabase::best(const std::string& workload, const std::string& target) const {
  auto r = top(workload, target, 1);
  if (r.empty()) return std::nullopt;
  return r[0];
}

std::vector<Record> TuningDatabase::similar(const std::string& structure_key, const std::string& exclude,
                                            const std::string& target, int k) const {
  // The best record of each similar workload, fastest first.
  Statement s = impl_->prepare(
      std::string("SELECT ") + kRecordColumns +
      " FROM records r WHERE target = ?1 AND error = '' AND median_seconds IS NOT NULL AND trace_format = ?2 AND "
      "workload != ?3"
      " AND workload IN (SELECT key FROM workloads WHERE structure_key = ?4) AND kind != ?6"
      " AND median_seconds = (SELECT MIN(median_seconds) FROM records q WHERE q.workload = r.workload AND q.target = "
      "r.target"
      " AND q.error = '' AND q.trace_format = r.trace_format AND q.kind != ?6) ORDER BY median_seconds LIMIT ?5");
  s.bind(1, target).bind(2, int64_t(kTraceFormatVersion)).bind(3, exclude).bind(4, structure_key).bind(5, int64_t(k));
  s.bind(6, RecordKind::InModel);
  std::vector<Record> out;
  while (s.step()) out.push_back(impl_->read_record(s));
  return out;
}

std::optional<Record> TuningDatabase::latest(const std::string& workload, const std::string& target, RecordKind kind,
                                             bool of_kind, const std::string& trace) const {
  std::string sql = std::string("SELECT ") + kRecordColumns +
                    " FROM records WHERE workload = ? AND target = ? AND error = '' AND median_seconds IS NOT NULL"
                    " AND trace_format = ? AND kind " +
                    (of_kind ? "=" : "!=") + " ?";
  if (!trace.empty()) sql += " AND trace = ?";
  Statement s = impl_->prepare(sql + " ORDER BY id DESC LIMIT 1");
  s.bind(1, workload).bind(2, target).bind(3, int64_t(kTraceFormatVersion)).bind(4, kind);
  if (!trace.empty()) s.bind(5, trace);
  if (!s.step()) return std::nullopt;
  return impl_->read_record(s);
}

std::optional<Record> TuningDatabase::find(const std::string& workload, const std::string& target,
                                           const std::string& trace) const {
  return latest(workload, target, RecordKind::InModel, false, trace);
}

std::optional<Record> TuningDatabase::find_in_model(const std::string& workload, const std::string& target,
                                                    const std::string& trace) const {
  return latest(workload, target, RecordKind::InModel, true, trace);
}

std::optional<Record> TuningDatabase::baseline(const std::string& workload, const std::string& target) const {
  return latest(workload, target, RecordKind::Default, true);
}

std::optional<Record> TuningDatabase::chosen(const std::string& workload, const std::string& target) const {
  std::optional<Record> fastest = best(workload, target);
  std::optional<Record> standard = baseline(workload, target);
  if (!fastest || !standard || standard->trace == fastest->trace) return fastest;
  std::optional<Record> tuned = find_in_model(workload, target, fastest->trace);
  std::optional<Record> fallback = find_in_model(workload, target, standard->trace);
  if (tuned && fallback && fallback->median_seconds() < tuned->median_seconds()) return fallback;
  return fastest;
}

std::vector<Record> TuningDatabase::all(const std::string& workload, const std::string& target) const {
  Statement s = impl_->prepare(std::string("SELECT ") + kRecordColumns +
                               " FROM records WHERE workload = ? AND target = ? ORDER BY id");
  s.bind(1, workload).bind(2, target);
  std::vector<Record> out;
  while (s.step()) out.push_back(impl_->read_record(s));
  return out;
}

std::vector<TuningDatabase::Summary> TuningDatabase::summaries() const {
  Statement s = impl_->prepare(
      "SELECT w.key, w.structure_key, w.description, w.definition, r.target, COUNT(*), SUM(r.error != ''),"
      " MIN(CASE WHEN r.error = '' AND r.trace_format = ? AND r.kind != ? THEN r.median_seconds END)"
      " FROM workloads w JOIN records r ON r.workload = w.key GROUP BY w.key, r.target ORDER BY w.description");
  s.bind(1, int64_t(kTraceFormatVersion)).bind(2, RecordKind::InModel);
  std::vector<Summary> out;
  while (s.step())
    out.push_back({{s.text(0), s.text(1), s.text(2), s.text(3)}, s.text(4), s.integer(5), s.integer(6), s.real(7)});
  return out;
}

std::string TuningDatabase::export_jsonl() const {
  std::ostringstream os;
  Statement w = impl_->prepare("SELECT key, structure_key, description, definition FROM workloads ORDER BY key");
  while (w.step())
    os << json{{"workload",
                {{"key", w.text(0)},
                 {"structure_key", w.text(1)},
                 {"description", w.text(2)},
                 {"definition", w.text(3)}}}}
              .dump()
       << "\n";
  Statement r = impl_->prepare(std::string("SELECT ") + kRecordColumns + " FROM records ORDER BY id");
  while (r.step()) {
    Record rec = impl_->read_record(r);
    json j{{"workload", rec.workload},
           {"target", rec.target},
           {"trace", json::parse(rec.trace)},
           {"costs", rec.costs},
           {"error", rec.error},
           {"kind", record_kind_name(rec.kind)},
           {"policy", rec.policy},
           {"tessera_version", rec.tessera_version},
           {"trace_format", rec.trace_format},
           {"created", rec.created}};
    if (rec.decisions) {
      j["sketch"] = rec.decisions->sketch;
      j["decisions"] = rec.decisions->values;
    }
    os << json{{"record", j}}.dump() << "\n";
  }
  return os.str();
}

int64_t TuningDatabase::import_jsonl(const std::string& text) {
  std::vector<WorkloadEntry> workloads;
  std::vector<Record> records;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      json j = json::parse(line);
      if (j.contains("workload")) {
        const auto& w = j.at("workload");
        workloads.push_back({w.at("key"), w.at("structure_key"), w.at("description"), w.at("definition")});
      } else {
        const auto& r = j.at("record");
        Record rec;
        rec.workload = r.at("workload");
        rec.target = r.at("target");
        rec.trace = r.at("trace").dump();
        rec.costs = r.at("costs").get<std::vector<double>>();
        rec.error = r.value("error", "");
        rec.policy = r.value("policy", "import");
        if (r.contains("kind")) {
          rec.kind = parse_record_kind(r.at("kind"));
        } else {  // exported before kinds had their own field: the policy named the kind
          rec.kind = kind_of_legacy_policy(rec.policy);
          if (rec.kind != RecordKind::Tuned) rec.policy = "";
        }
        if (r.contains("sketch")) rec.decisions = SketchDecisions{r.at("sketch"), r.at("decisions").get<Decisions>()};
        rec.tessera_version = r.value("tessera_version", "unknown");
        rec.trace_format = r.value("trace_format", 0);
        rec.created = r.value("created", 0.0);
        records.push_back(rec);
      }
    } catch (const std::exception& e) {  // malformed JSON, a missing field, an unknown kind
      fail("import: line ", n, " is not a tuning record: ", e.what());
    }
  }
  impl_->transaction([&] {
    for (const auto& w : workloads) add_workload(w);
    for (const auto& r : records)
      if (!workload(r.workload)) fail("import: record for workload ", r.workload, ", which the file does not define");
  });
  commit(records);
  return static_cast<int64_t>(records.size());
}

int64_t TuningDatabase::prune(int keep) {
  if (keep < 1) fail("prune: keep at least one record per workload");
  int64_t before = 0, after = 0;
  impl_->transaction([&] {
    Statement count = impl_->prepare("SELECT COUNT(*) FROM records");
    count.step();
    before = count.integer(0);
    Statement del = impl_->prepare(
        "DELETE FROM records WHERE error != '' OR median_seconds IS NULL OR trace_format != ?1 OR id NOT IN ("
        " SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY workload, target ORDER BY median_seconds) AS rank"
        " FROM records WHERE error = '' AND median_seconds IS NOT NULL AND trace_format = ?1 AND kind != ?3) WHERE "
        "rank <= ?2"
        " UNION SELECT MAX(id) FROM records WHERE kind = ?3 GROUP BY workload, target, trace)");
    del.bind(1, int64_t(kTraceFormatVersion)).bind(2, int64_t(keep)).bind(3, RecordKind::InModel);
    del.step();
    Statement again = impl_->prepare("SELECT COUNT(*) FROM records");
    again.step();
    after = again.integer(0);
  });
  return before - after;
}

}  // namespace tessera::autotune
