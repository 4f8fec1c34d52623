// The thread pool that runs generated kernels' parallel loops: every task runs exactly once,
// launches back to back or from several threads lose nothing, a task's exception reaches the
// launcher, nested loops run serially. ThreadSanitizer runs these (scripts/test.sh --sanitize=thread).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/error.h"
#include "runtime/thread_pool.h"

namespace tessera::runtime {
namespace {

// Four threads, more than this machine's cores, so workers really interleave (unless the
// environment asks for a size; the pool is made on first use, once per process).
ThreadPool& pool() {
  setenv("TESSERA_NUM_THREADS", "4", /*overwrite=*/0);
  return ThreadPool::global();
}

// Runs a loop of `n` tasks and returns how often each ran.
std::vector<int> run_counts(int n) {
  std::vector<std::atomic<int>> counts(n);
  pool().parallel_for(n, [&](int t) { counts[t].fetch_add(1); });
  std::vector<int> result;
  for (auto& c : counts) result.push_back(c.load());
  return result;
}

TEST(ThreadPool, EveryTaskRunsOnce) {
  for (int n : {0, 1, 2, 3, 4, 5, 17, 1000}) EXPECT_EQ(run_counts(n), std::vector<int>(n, 1)) << n << " tasks";
}

TEST(ThreadPool, BackToBackLaunchesLoseNoTask) {
  // Workers still leaving one loop while the next starts must neither take nor skip its tasks.
  for (int launch = 0; launch < 2000; ++launch) {
    std::atomic<int> ran{0};
    int n = 1 + launch % 7;
    pool().parallel_for(n, [&](int) { ran.fetch_add(1); });
    ASSERT_EQ(ran.load(), n) << "launch " << launch;
  }
}

TEST(ThreadPool, LaunchesFromSeveralThreads) {
  auto launcher = [](std::vector<int>* sums) {
    for (int launch = 0; launch < 200; ++launch) {
      std::vector<int> out(8, 0);  // each task writes its own element
      pool().parallel_for(8, [&](int t) { out[t] = t + launch; });
      int sum = 0;
      for (int v : out) sum += v;
      sums->push_back(sum);
    }
  };
  std::vector<int> a, b;
  std::thread first(launcher, &a), second(launcher, &b);
  first.join();
  second.join();
  std::vector<int> expected;
  for (int launch = 0; launch < 200; ++launch) expected.push_back(28 + 8 * launch);
  EXPECT_EQ(a, expected);
  EXPECT_EQ(b, expected);
}

TEST(ThreadPool, ATaskErrorReachesTheLauncher) {
  std::atomic<int> ran{0};
  try {
    pool().parallel_for(16, [&](int t) {
      ran.fetch_add(1);
      if (t == 5) fail("task ", t, " failed");
    });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "task 5 failed");
  }
  EXPECT_EQ(ran.load(), 16);                         // the others still ran
  EXPECT_EQ(run_counts(9), std::vector<int>(9, 1));  // and the pool goes on
}

TEST(ThreadPool, NestedLoopsRunSerially) {
  std::vector<std::atomic<int>> counts(6 * 5);
  pool().parallel_for(
      6, [&](int outer) { pool().parallel_for(5, [&](int inner) { counts[outer * 5 + inner].fetch_add(1); }); });
  for (auto& c : counts) EXPECT_EQ(c.load(), 1);
}

TEST(ThreadPool, ParallelLaunchReturnsATaskStatus) {
  auto task = [](int32_t t, int32_t n, void* closure) -> int32_t {
    static_cast<std::atomic<int>*>(closure)->fetch_add(1);
    return t == n - 1 ? 7 : 0;
  };
  std::atomic<int> ran{0};
  EXPECT_EQ(tessera_parallel_launch(task, &ran, 12), 7);
  EXPECT_EQ(ran.load(), 12);
  EXPECT_EQ(tessera_num_threads(), pool().num_threads());
}

TEST(ThreadPool, ParallelCopyCopiesEveryByte) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(3), size_t(4095), size_t(1) << 20}) {
    std::vector<char> from(bytes), to(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) from[i] = static_cast<char>(i * 31 + 7);
    parallel_copy(to.data(), from.data(), bytes);
    EXPECT_EQ(to, from) << bytes << " bytes";
  }
}

}  // namespace
}  // namespace tessera::runtime
