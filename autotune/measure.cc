#include "autotune/measure.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/error.h"

extern char** environ;

namespace tessera::autotune {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kWorkerName = "tessera-measure";
// Fixed, so a worker's inputs and reference outputs stay valid across calls for one task.
constexpr uint64_t kSeed = 20240601;
// How much of the worker's stderr is kept to explain a crash.
constexpr size_t kStderrTail = 4096;

bool is_executable(const std::string& path) { return access(path.c_str(), X_OK) == 0 && !fs::is_directory(path); }

std::string find_worker(const std::string& configured) {
  if (!configured.empty()) {
    if (!is_executable(configured))
      fail("measurement worker ", configured, " (MeasureOptions::worker_path) is not an executable file");
    return configured;
  }
  if (const char* env = std::getenv("TESSERA_MEASURE_WORKER"); env && *env) {
    if (!is_executable(env)) fail("measurement worker ", env, " ($TESSERA_MEASURE_WORKER) is not an executable file");
    return env;
  }
  std::vector<std::string> looked;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) looked.push_back((exe.parent_path() / kWorkerName).string());
  // From Python the executable is the interpreter; the library's own folder still leads to bin/.
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&find_worker), &info) && info.dli_fname)
    looked.push_back(
        (fs::absolute(info.dli_fname).parent_path() / ".." / "bin" / kWorkerName).lexically_normal().string());
  std::string list;
  for (const auto& p : looked) {
    if (is_executable(p)) return p;
    list += (list.empty() ? "" : ", ") + p;
  }
  fail("measurement worker ", kWorkerName, " not found (looked for ", list,
       "); set TESSERA_MEASURE_WORKER to its path");
}

int remaining_ms(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, INT_MAX));
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.substr(text.rfind('\n') + 1);  // npos + 1: the whole text
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

// A running tessera-measure. Requests go in and answers come out through one socket, not pipes:
// sending to a dead worker then fails with EPIPE instead of raising SIGPIPE in the caller (which
// may be a Python interpreter). Its stderr comes through a pipe; the last line explains a crash.
class Measurer::Worker {
 public:
  enum class Status { Ok, Timeout, Exited };

  explicit Worker(const std::string& path) {
    int sock[2], err[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) != 0)
      fail("measurement worker: socketpair: ", std::strerror(errno));
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(sock[0]), close(sock[1]);
      fail("measurement worker: pipe: ", std::strerror(errno));
    }
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_adddup2(&files, sock[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&files, sock[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&files, err[1], STDERR_FILENO);
    // The caller's blocked and ignored signals (Python ignores SIGPIPE) are not the worker's.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    // Its own process group: Ctrl-C at a terminal stops the session between batches (the tuner
    // handles it) instead of killing the batch in flight, whose results would read as crashes.
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
    // posix_spawn, never fork: the calling process may have other threads.
    int rc = posix_spawn(&pid_, path.c_str(), &files, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    close(sock[1]), close(err[1]);
    sock_ = sock[0], err_ = err[0];
    if (rc != 0) {
      close(sock_), close(err_);
      fail("cannot start the measurement worker ", path, ": ", std::strerror(rc));
    }
  }

  ~Worker() {
    if (pid_ > 0) {
      // No more requests: an idle worker exits at once; a busy one is not waited for long.
      shutdown(sock_, SHUT_WR);
      std::string ignored;
      while (read_line(ignored, 1.0) == Status::Ok) {
      }
      reap();
    }
    close(sock_), close(err_);
  }

  // False when it has exited (say, killed from outside while idle).
  bool running() {
    int status;
    if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
    return pid_ > 0;
  }

  Status send(const std::string& line, double timeout_seconds) {
    const auto deadline = after(timeout_seconds);
    for (size_t done = 0; done < line.size();) {
      pollfd p{sock_, POLLOUT, 0};
      int n = poll(&p, 1, remaining_ms(deadline));
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) return Status::Timeout;
      ssize_t sent = ::send(sock_, line.data() + done, line.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (sent < 0) return Status::Exited;
      done += static_cast<size_t>(sent);
    }
    return Status::Ok;
  }

  Status read_line(std::string& line, double timeout_seconds) {
    const auto deadline = after(timeout_seconds);
    for (;;) {
      size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        stderr_.clear();  // what it wrote before this answer does not explain a later crash
        return Status::Ok;
      }
      pollfd fds[2] = {{sock_, POLLIN, 0}, {stderr_open_ ? err_ : -1, POLLIN, 0}};
      int n = poll(fds, 2, remaining_ms(deadline));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::Exited;  // cannot happen short of kernel trouble; the worker is replaced
      if (n == 0) return Status::Timeout;
      if (fds[1].revents) read_stderr();
      if (fds[0].revents) {
        char chunk[1 << 16];
        ssize_t got = recv(sock_, chunk, sizeof chunk, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return Status::Exited;  // closed, or reset when it died with input unread
        buffer_.append(chunk, static_cast<size_t>(got));
      }
    }
  }

  // After its socket closed: how it ended, "crashed: SIGSEGV (its last line on stderr)".
  std::string exit_reason() {
    int status = reap();
    while (stderr_open_) read_stderr();  // it has exited, so this reaches the end without waiting
    std::string why = WIFSIGNALED(status) ? "crashed: " + signal_name(WTERMSIG(status))
                                          : "crashed: exit status " + std::to_string(WEXITSTATUS(status));
    std::string last = last_line(stderr_);
    return last.empty() ? why : why + " (" + last + ")";
  }

  // Kills it if it still runs (a hung worker) and collects its exit status.
  int reap() {
    int status = 0;
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
    return status;
  }

 private:
  void read_stderr() {
    char chunk[4096];
    ssize_t got = read(err_, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) return;
    if (got <= 0) {
      stderr_open_ = false;
      return;
    }
    stderr_.append(chunk, static_cast<size_t>(got));
    if (stderr_.size() > kStderrTail) stderr_.erase(0, stderr_.size() - kStderrTail);
  }

  pid_t pid_ = -1;
  int sock_ = -1, err_ = -1;
  bool stderr_open_ = true;
  std::string buffer_;  // answer bytes after the last complete line
  std::string stderr_;  // the tail of what it wrote to stderr since its last answer
};

Measurer::Measurer(MeasureOptions options) : options_(std::move(options)) {
  if (options_.repeat < 1) fail("measure options: repeat must be at least 1, got ", options_.repeat);
  if (options_.number < 0) fail("measure options: number must be 0 (automatic) or more, got ", options_.number);
  if (!(options_.timeout_seconds > 0))
    fail("measure options: timeout_seconds must be positive, got ", options_.timeout_seconds);
  options_.worker_path = find_worker(options_.worker_path);
}

Measurer::~Measurer() = default;

double MeasureResult::median_seconds() const { return valid() ? median_of(costs) : 0; }

Record make_record(const Task& task, const std::string& target, const std::string& trace, const MeasureResult& m,
                   RecordKind kind) {
  Record r;
  r.workload = task.workload.key;
  r.target = target;
  r.trace = trace;
  r.costs = m.costs;
  r.error = m.error;
  r.kind = kind;
  return r;
}

const MeasureResult& faster(const MeasureResult& a, const MeasureResult& b) {
  if (!a.valid() || !b.valid()) return a.valid() ? a : b;
  return b.median_seconds() < a.median_seconds() ? b : a;
}

std::vector<MeasureResult> Measurer::measure(const Task& task, const std::string& target,
                                             const std::vector<std::string>& traces) {
  std::vector<MeasureResult> results(traces.size());
  try {
    for (size_t next = 0; next < traces.size();) next = measure_from(task, target, traces, next, results);
  } catch (...) {
    worker_.reset();  // in an unknown state: the next call starts a fresh one
    throw;
  }
  return results;
}

// Sends traces[first...] in one request and records the answers until all are in or the worker
// fails; returns the index of the first trace still without a result.
size_t Measurer::measure_from(const Task& task, const std::string& target, const std::vector<std::string>& traces,
                              size_t first, std::vector<MeasureResult>& results) {
  if (worker_ && !worker_->running()) worker_.reset();
  if (!worker_) worker_ = std::make_unique<Worker>(options_.worker_path);
  const MeasureOptions& o = options_;
  json request = {
      {"kernel", task.kernel},
      {"target", target},
      {"repeat", o.repeat},
      {"number", o.number},
      {"min_repeat_ms", o.min_repeat_ms},
      {"flush_cache", o.flush_cache},
      {"check", o.check},
      {"written_inputs", o.fresh_inputs ? task.written_inputs : std::vector<size_t>{}},
      {"seed", kSeed},
      {"candidates", std::vector<std::string>(traces.begin() + static_cast<std::ptrdiff_t>(first), traces.end())}};
  std::ostringstream timeout;
  timeout << "timeout after " << o.timeout_seconds << " s";

  // The worker answers "ready" once it has the task, its inputs and the reference outputs; that
  // set-up gets a timeout of its own, so a slow one is not charged to the first candidate.
  std::string line, setup_error;
  Worker::Status status =
      worker_->send(request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", o.timeout_seconds);
  if (status == Worker::Status::Ok) status = worker_->read_line(line, o.timeout_seconds);
  if (status == Worker::Status::Timeout) setup_error = timeout.str();
  if (status == Worker::Status::Exited) setup_error = worker_->exit_reason();
  bool refused = false;  // it answered {"ready": false, "error": ...} and waits for the next request
  if (status == Worker::Status::Ok) {
    json ready = json::parse(line, nullptr, false);
    json flag = ready.is_object() ? ready.value("ready", json()) : json();
    refused = flag == false;
    if (refused) {
      json error = ready.value("error", json("not ready"));
      setup_error = error.is_string() ? error.get<std::string>() : error.dump();
    } else if (flag != true) setup_error = "the worker answered '" + line + "' instead of ready";
  }
  if (!setup_error.empty()) {
    if (!refused) {
      worker_->reap();
      worker_.reset();
    }
    for (size_t i = first; i < traces.size(); ++i) results[i].error = "setup: " + setup_error;
    return traces.size();
  }

  for (size_t i = first; i < traces.size(); ++i) {
    status = worker_->read_line(line, o.timeout_seconds);
    MeasureResult& r = results[i];
    if (status == Worker::Status::Ok) {
      json answer = json::parse(line, nullptr, false);
      try {
        if (answer.at("index").get<size_t>() != i - first) fail("answer for candidate ", answer["index"].dump());
        r.costs = answer.at("costs").get<std::vector<double>>();
        r.compile_seconds = answer.at("compile_seconds").get<double>();
        r.error = answer.at("error").get<std::string>();
        continue;
      } catch (const std::exception& e) {
        r = MeasureResult();
        r.error = "the worker's answer '" + line + "' is not the expected one: " + e.what();
      }
    } else {
      r.error = status == Worker::Status::Timeout ? timeout.str() : worker_->exit_reason();
    }
    worker_->reap();
    worker_.reset();
    return i + 1;
  }
  return traces.size();
}

}  // namespace tessera::autotune
