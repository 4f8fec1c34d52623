#include "runtime/thread_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::runtime {

namespace {
// Set while a thread runs a pool task, so a parallel loop inside a task runs serially
// instead of waiting for workers that are all busy.
thread_local bool t_in_parallel_region = false;
// How long a worker spins before sleeping. Kernels launch parallel loops back to back, and a
// sleeping worker wakes late: by then the launching thread has often taken its task too, and the
// loop ran on one core: a short spin made kernels launched back to back run at about half speed
// most of the time (benchmarks/NOTES.md, "Thread pool spin time"). libgomp and ONNX Runtime
// spin before sleeping too.
constexpr auto kSpinTime = std::chrono::milliseconds(2);
}  // namespace

int default_num_threads() {
  if (const char* env = std::getenv("TESSERA_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

// One parallel loop. Each launch gets its own: a worker still finishing the previous loop can
// only claim indices of that loop (all taken, so it stops), never one of the next. With shared
// counters reset per launch, such a worker could take index 0 of the new loop between the
// reset of the counter and the store of its size, see a size of 0 and leave, and the task it
// had claimed was never run: the launching thread waited forever.
struct Job {
  const std::function<void(int)>* fn = nullptr;
  int num_tasks = 0;
  std::atomic<int> next_task{0};
  std::atomic<int> remaining{0};
  std::exception_ptr error;
  std::mutex error_mutex;

  void run_tasks() {
    t_in_parallel_region = true;
    for (int t; (t = next_task.fetch_add(1)) < num_tasks;) {
      try {
        (*fn)(t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
      remaining.fetch_sub(1, std::memory_order_acq_rel);
    }
    t_in_parallel_region = false;
  }
};

struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<std::thread> workers;
  bool stopping = false;
  // One job at a time: the launching thread holds `launch_mutex` until the job finishes.
  std::mutex launch_mutex;
  std::atomic<uint64_t> generation{0};
  std::shared_ptr<Job> job;  // the latest; read and written with std::atomic_load / atomic_store
  std::atomic<int64_t> shared_calls{0};

  void worker_loop() {
    uint64_t seen = 0;
    while (true) {
      auto give_up = std::chrono::steady_clock::now() + kSpinTime;
      for (int spins = 1; generation.load(std::memory_order_acquire) == seen; ++spins)
        if (spins % 256 == 0 && std::chrono::steady_clock::now() > give_up) break;
      if (generation.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stopping || generation.load() != seen; });
        if (stopping) return;
      }
      seen = generation.load(std::memory_order_acquire);
      std::atomic_load(&job)->run_tasks();
    }
  }
};

ThreadPool::ThreadPool(int num_threads) : state_(new State), num_threads_(num_threads) {
  for (int i = 1; i < num_threads; ++i) state_->workers.emplace_back([s = state_] { s->worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  for (auto& w : state_->workers) w.join();
  delete state_;
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(default_num_threads());
  return pool;
}

void ThreadPool::parallel_for(int num_tasks, const std::function<void(int)>& fn) {
  if (num_tasks <= 0) return;
  if (num_tasks == 1 || num_threads_ == 1 || t_in_parallel_region) {
    for (int t = 0; t < num_tasks; ++t) fn(t);
    return;
  }
  State& s = *state_;
  std::lock_guard<std::mutex> launch(s.launch_mutex);
  s.shared_calls.fetch_add(1, std::memory_order_relaxed);
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->num_tasks = num_tasks;
  job->remaining.store(num_tasks);
  std::atomic_store(&s.job, job);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.generation.fetch_add(1, std::memory_order_release);
  }
  s.wake.notify_all();
  job->run_tasks();
  while (job->remaining.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  if (job->error) std::rethrow_exception(job->error);
}

int64_t ThreadPool::shared_calls() const { return state_->shared_calls.load(std::memory_order_relaxed); }

void parallel_copy(void* to, const void* from, size_t bytes) {
  // An empty array may have no storage: memcpy must not be handed its null pointer, even for 0 bytes.
  if (bytes == 0) return;
  ThreadPool& pool = ThreadPool::global();
  const int parts = pool.num_threads();
  pool.parallel_for(parts, [&](int t) {
    size_t begin = bytes * t / parts, end = bytes * (t + 1) / parts;
    std::memcpy(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin, end - begin);
  });
}

}  // namespace tessera::runtime

extern "C" int32_t tessera_parallel_launch(TesseraParallelTask task, void* closure, int32_t num_tasks) {
  std::atomic<int32_t> status{0};
  tessera::runtime::ThreadPool::global().parallel_for(num_tasks, [&](int t) {
    int32_t rc = task(t, num_tasks, closure);
    if (rc != 0) {
      int32_t expected = 0;
      status.compare_exchange_strong(expected, rc);
    }
  });
  return status.load();
}

extern "C" int32_t tessera_num_threads(void) { return tessera::runtime::ThreadPool::global().num_threads(); }
