// The tuning database: one SQLite file (WAL mode, prepared statements, one transaction per
// measured batch) holding the workloads Tessera has seen and the schedules measured for them.
// A record is keyed by (workload, target) and holds the schedule's trace (never code), its
// measured costs or its error, its kind, the search policy and decisions that found it and the
// versions that wrote it. A file of an older schema is migrated when opened.
// Lookups filter by target and version; a miss is reported, never silently filled. Several
// processes may write one file at once; an interrupted session loses at most its batch in flight.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/decisions.h"
#include "autotune/record_kind.h"

namespace tessera::autotune {

// Records written under another format are ignored by lookups: their traces may not replay, or
// their costs were measured another way. 2: costs of calls on freshly written inputs
// (MeasureOptions::fresh_inputs), slower than format 1's on inputs left in the caches.
constexpr int kTraceFormatVersion = 2;

struct WorkloadEntry {
  std::string key;            // SHA-256 of the canonical compute definition with shapes and dtypes
  std::string structure_key;  // the same with shapes erased: similar workloads share it
  std::string description;    // e.g. "fused_conv_add_relu float32[1, 64, 56, 56], ..."
  std::string definition;     // the canonical compute definition (graph-IR text of the kernel)
};

// The median of measured times (the upper one of an even count); 0 for none.
double median_of(std::vector<double> costs);

struct Record {
  int64_t id = 0;             // assigned by the database
  std::string workload;       // WorkloadEntry::key
  std::string target;         // canonical target string
  std::string trace;          // the schedule trace, JSON
  std::vector<double> costs;  // measured seconds per run (empty for errors)
  std::string error;          // empty: a valid measurement
  RecordKind kind = RecordKind::Tuned;
  std::string policy;  // Tuned: the search that proposed it ("evolutionary", "random", "import")
  // The sketch and decisions a search sampled the trace from: absent for schedules no search
  // sampled (the other kinds) and for records written before they were stored.
  std::optional<SketchDecisions> decisions;
  std::string tessera_version;
  int trace_format = kTraceFormatVersion;
  double created = 0;  // Unix time
  double min_seconds() const;
  double median_seconds() const;
  // How the record was found, as `tessera db show` lists it: the policy of a tuned record, else
  // its kind.
  std::string found_by() const;
};

class TuningDatabase {
 public:
  // $TESSERA_DB, else ~/.cache/tessera/tuning.db.
  static std::string default_path();
  // Opens (creating if needed) the file, migrating an older schema in one transaction; throws
  // tessera::Error naming it if it is not a Tessera tuning database (or not a database at all),
  // if its schema is newer than this Tessera's, or if its migration fails (the file unchanged).
  // Reading a malformed row throws naming the file and the record.
  explicit TuningDatabase(const std::string& path);
  // The database at `path` if that file exists (builds read it; they never create one).
  static std::unique_ptr<TuningDatabase> open_existing(const std::string& path);
  ~TuningDatabase();
  TuningDatabase(const TuningDatabase&) = delete;
  TuningDatabase& operator=(const TuningDatabase&) = delete;

  const std::string& path() const { return path_; }

  void add_workload(const WorkloadEntry& w);
  std::optional<WorkloadEntry> workload(const std::string& key) const;
  // Adds the records in one transaction (all or none); returns their ids.
  std::vector<int64_t> commit(const std::vector<Record>& records);

  // Lookups of the fastest records (best(), top(), similar(), find(), summaries()) skip in-model
  // records, whose times are not comparable with a kernel's timed alone; chosen() reads them.

  // The record builds use: the fastest one timed alone (best()), unless the model check timed it
  // in a model against the default schedule and it lost there; then the default's in-model
  // record. A faster schedule found later is used until a model check times it in turn.
  std::optional<Record> chosen(const std::string& workload, const std::string& target) const;
  // The latest valid, compatible record of the default schedule (RecordKind::Default), if measured.
  std::optional<Record> baseline(const std::string& workload, const std::string& target) const;
  // The latest in-model record of exactly this trace, if a model check timed it.
  std::optional<Record> find_in_model(const std::string& workload, const std::string& target,
                                      const std::string& trace) const;
  // The fastest valid, compatible record of (workload, target) timed alone, if any.
  std::optional<Record> best(const std::string& workload, const std::string& target) const;
  // The k fastest valid, compatible records of (workload, target).
  std::vector<Record> top(const std::string& workload, const std::string& target, int k) const;
  // The fastest valid records of other workloads with this structure (schedule transfer).
  std::vector<Record> similar(const std::string& structure_key, const std::string& exclude_workload,
                              const std::string& target, int k) const;
  // The latest valid, compatible record of exactly this trace, if it was measured.
  std::optional<Record> find(const std::string& workload, const std::string& target, const std::string& trace) const;
  // Every record of a workload for a target, valid or not, oldest first (resuming a session).
  std::vector<Record> all(const std::string& workload, const std::string& target) const;

  struct Summary {
    WorkloadEntry workload;
    std::string target;
    int64_t records = 0, errors = 0;
    double best_seconds = 0;  // 0: no valid record
  };
  std::vector<Summary> summaries() const;

  // JSON lines: {"workload": {...}} then {"record": {...}} per line.
  std::string export_jsonl() const;
  // Adds what a JSON-lines export holds; throws naming the line of a malformed entry, having
  // added nothing. Returns the number of records added.
  int64_t import_jsonl(const std::string& text);
  // Keeps, per (workload, target), the `keep` fastest valid compatible records timed alone and
  // the latest in-model record of each trace; drops the rest (errors, slower ones, incompatible
  // versions). Returns the number removed.
  int64_t prune(int keep);

 private:
  // The latest valid, compatible record of (workload, target) whose kind is `kind` (or, when
  // `of_kind` is false, is not) and, unless `trace` is empty, has this trace.
  std::optional<Record> latest(const std::string& workload, const std::string& target, RecordKind kind, bool of_kind,
                               const std::string& trace = "") const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_;
};

}  // namespace tessera::autotune
