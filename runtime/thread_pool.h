// The process-wide pool that runs parallel loops of generated kernels. It is created once, on
// first use, with one thread per core (or TESSERA_NUM_THREADS); the calling thread takes part,
// so a pool of N threads starts N-1 workers. Nested parallel regions run serially.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

namespace tessera::runtime {

class ThreadPool {
 public:
  static ThreadPool& global();
  int num_threads() const { return num_threads_; }
  // Runs fn(task) for task in [0, num_tasks), spread over the pool; returns when all are done.
  // The first exception a task throws is rethrown here.
  void parallel_for(int num_tasks, const std::function<void(int)>& fn);
  // How many parallel_for calls were shared out to the pool's threads (rather than run on the
  // calling thread alone) since it started: whether a kernel's parallel loop ran in parallel.
  int64_t shared_calls() const;

  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

 private:
  explicit ThreadPool(int num_threads);
  struct State;
  State* state_;
  int num_threads_;
};

// Number of threads from TESSERA_NUM_THREADS, else the core count.
int default_num_threads();

// Copies `bytes` through the global pool, each thread a contiguous share, as a kernel's parallel
// loop writes its output: the kernel that reads the copy then finds each thread's share in that
// thread's core's cache (on two cores, data the other core just wrote costs a third to a half
// more to read).
void parallel_copy(void* to, const void* from, size_t bytes);

}  // namespace tessera::runtime

extern "C" {
// The entry generated code calls for a parallel loop: runs task(i, num_tasks, closure) for
// i in [0, num_tasks) on the pool. A task returns 0 on success; the first nonzero is returned.
typedef int32_t (*TesseraParallelTask)(int32_t task_id, int32_t num_tasks, void* closure);
int32_t tessera_parallel_launch(TesseraParallelTask task, void* closure, int32_t num_tasks);
// How many tasks a parallel loop should be split into (the pool's size).
int32_t tessera_num_threads(void);
}
