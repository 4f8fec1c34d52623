// The tuning database: lookups filtered by target and version, transactions, concurrent writers,
// interrupted sessions, JSON-lines export/import, pruning, and clear errors for bad files.
#include <gtest/gtest.h>
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

WorkloadEntry workload(const std::string& key, const std::string& structure = "s") { return {key, structure, "desc " + key, "def"}; }

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
  db.commit({record("a", "llvm", 0.004), record("a", "llvm", 0.002), record("b", "llvm", 0.003), record("c", "llvm", 0.001)});
  auto sim = db.similar("conv3x3", "b", "llvm", 5);
  ASSERT_EQ(sim.size(), 1u);  // a's best only, not b itself, not c
  EXPECT_EQ(sim[0].workload, "a");
  EXPECT_DOUBLE_EQ(sim[0].median_seconds(), 0.0022);
}

TEST(TuningDatabase, ExportImportAndPrune) {
  TuningDatabase db(temp_path("export.db"));
  db.add_workload(workload("w"));
  db.commit({record("w", "llvm", 0.004), record("w", "llvm", 0.002), record("w", "llvm", 0.003), record("w", "llvm", 0, "timeout")});
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

Record timed(const std::string& trace, const std::string& policy, double seconds) {
  Record r = record("w", "llvm", seconds);
  r.trace = trace;
  r.policy = policy;
  return r;
}

TEST(TuningDatabase, BuildsUseWhatTheModelCheckChose) {
  TuningDatabase db(temp_path("chosen.db"));
  db.add_workload(workload("w"));
  db.commit({timed("[]", "default", 0.004), timed("[1]", "evolutionary", 0.003)});
  EXPECT_EQ(db.chosen("w", "llvm")->trace, "[1]");  // nothing timed in a model: the fastest alone
  // The model check timed both in the model, where the default ran faster. In-model times are
  // never compared with times taken alone: the default's 1 ms there does not make it best().
  db.commit({timed("[]", kInModelPolicy, 0.001), timed("[1]", kInModelPolicy, 0.002)});
  EXPECT_EQ(db.best("w", "llvm")->trace, "[1]");
  EXPECT_DOUBLE_EQ(db.best("w", "llvm")->median_seconds(), 0.0033);
  EXPECT_DOUBLE_EQ(db.summaries()[0].best_seconds, 0.0033);
  EXPECT_EQ(db.find("w", "llvm", "[]")->policy, "default");
  EXPECT_TRUE(db.similar("s", "other", "llvm", 5)[0].policy != kInModelPolicy);
  auto chosen = db.chosen("w", "llvm");
  EXPECT_EQ(chosen->trace, "[]");
  EXPECT_EQ(chosen->policy, kInModelPolicy);
  // Timed alone again (a later session re-times its best): the verdict stands.
  db.commit({timed("[1]", "evolutionary", 0.003)});
  EXPECT_EQ(db.chosen("w", "llvm")->trace, "[]");
  // A faster schedule found alone is used until a model check times it in turn.
  db.commit({timed("[2]", "evolutionary", 0.002)});
  EXPECT_EQ(db.chosen("w", "llvm")->trace, "[2]");
  db.commit({timed("[]", kInModelPolicy, 0.0012), timed("[2]", kInModelPolicy, 0.001)});
  EXPECT_EQ(db.chosen("w", "llvm")->trace, "[2]");
  EXPECT_EQ(db.chosen("w", "llvm")->policy, "evolutionary");
  // Pruning keeps the fastest records timed alone and the latest in-model record of each trace.
  db.prune(1);
  std::vector<std::string> kept;
  for (const auto& r : db.all("w", "llvm")) kept.push_back(r.trace + " " + r.policy);
  EXPECT_EQ(kept, (std::vector<std::string>{"[1] in-model", "[2] evolutionary", "[] in-model", "[2] in-model"}));
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
    for (int b = 0; b < batches; ++b) db.commit({record("w", "llvm", base + b * 1e-6), record("w", "llvm", base + b * 2e-6)});
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
    for (int b = 0; b < 30; ++b) db.commit({record("w", "llvm", base + b * 1e-6), record("w", "llvm", base + b * 2e-6)});
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
