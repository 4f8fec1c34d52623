// tessera-measure: the process in which the tuner compiles, checks and times schedule candidates
// (autotune/measure.h starts it and reads its answers), so that a candidate that crashes or hangs
// takes down this process, never the tuning session.
//
// Protocol: one JSON request per line on stdin,
//   {"kernel": graph-IR text, "target": "llvm ...", "repeat": R, "number": N, "min_repeat_ms": M,
//    "flush_cache": bool, "check": bool, "seed": S, "written_inputs": [input index, ...],
//    "candidates": [trace JSON text, ...]}
// answered on stdout, first by one line once the inputs (and, with check, the reference outputs
// of the default schedule) are ready:
//   {"ready": true, "setup_seconds": x}  or  {"ready": false, "error": "..."}
// then, after a ready, by one line per candidate, in order, as soon as it is done:
//   {"index": i, "costs": [R seconds, each the mean of N calls], "compile_seconds": x, "error": ""}
// The calls of a run follow each other back to back, or with written inputs, each after those
// inputs were rewritten through the thread pool (not timed).
// For a device target (opencl, cuda), the kernel runs on the target's device (targets::find_device)
// with its arguments in device memory, each run is timed by device events around its N calls,
// and "written_inputs" and "flush_cache" do not apply: a device's caches are not the host's.
// Requests are served until stdin ends. The inputs and reference outputs of the last kernel are
// kept, so a tuning session that sends one request per batch of a task sets up only once.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "autotune/apply_record.h"
#include "autotune/task.h"
#include "runtime/device_api.h"
#include "runtime/device_program.h"
#include "runtime/element.h"
#include "runtime/error.h"
#include "runtime/half.h"
#include "runtime/thread_pool.h"
#include "schedule/lower.h"
#include "schedule/templates/default.h"
#include "targets/build.h"

using namespace tessera;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Request {
  std::string kernel, target;
  int repeat = 5, number = 0;
  double min_repeat_ms = 10;
  bool flush_cache = false, check = true;
  uint64_t seed = 0;
  std::vector<size_t> written_inputs;
  std::vector<std::string> candidates;
};

Request parse_request(const std::string& line) {
  json j = json::parse(line);
  Request r;
  r.kernel = j.at("kernel").get<std::string>();
  r.target = j.at("target").get<std::string>();
  r.repeat = std::max(1, j.value("repeat", r.repeat));
  r.number = j.value("number", r.number);
  r.min_repeat_ms = j.value("min_repeat_ms", r.min_repeat_ms);
  r.flush_cache = j.value("flush_cache", r.flush_cache);
  r.check = j.value("check", r.check);
  r.seed = j.value("seed", r.seed);
  r.written_inputs = j.value("written_inputs", r.written_inputs);
  r.candidates = j.at("candidates").get<std::vector<std::string>>();
  return r;
}

// Writes one answer line to the protocol descriptor. Error texts may hold any bytes (compiler
// messages); invalid UTF-8 is replaced rather than allowed to throw.
void answer(int fd, const json& j) {
  std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  for (size_t done = 0; done < line.size();) {
    ssize_t n = write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::exit(1);  // the measurer is gone
    done += static_cast<size_t>(n);
  }
}

// Random values every schedule of a kernel must compute the same results from: floats in
// [-1, 1); integers and bools in {0, 1}, which is a valid index for any gather-like input.
void fill_random(runtime::NDArray& a, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const runtime::DataType t = a.dtype();
  char* p = static_cast<char*>(a.data());
  for (int64_t i = 0; i < a.numel(); ++i, p += t.element_bytes()) {
    auto put = [&](auto v) { std::memcpy(p, &v, sizeof v); };
    if (t.is_float()) {
      double v = uniform(rng);
      if (t.bits == 16) put(runtime::float_to_half(static_cast<float>(v)));
      else if (t.bits == 32) put(static_cast<float>(v));
      else put(v);
    } else {
      uint64_t bit = rng() & 1;  // little-endian: the low byte holds it whatever the width
      std::memcpy(p, &bit, static_cast<size_t>(t.element_bytes()));
    }
  }
}

// "" when `actual` matches `expected`: floats within atol + rtol * |expected| (NaN matches NaN),
// everything else bit for bit. Otherwise names the worst element.
std::string compare(const runtime::NDArray& expected, const runtime::NDArray& actual, size_t output) {
  const runtime::DataType t = expected.dtype();
  const size_t bytes = static_cast<size_t>(t.element_bytes());
  // One rounding of float16 is already ~1e-3 relative, so it gets more room than float32.
  const double rtol = t.is_float() && t.bits == 16 ? 1e-2 : 1e-3;
  // Sums whose terms cancel (a Winograd output transform over random inputs) carry the rounding
  // of their terms, not of their result: the absolute tolerance scales with the output's size.
  double scale = 1;
  for (int64_t i = 0; t.is_float() && i < expected.numel(); ++i)
    if (std::isfinite(runtime::element_as_double(expected, i)))
      scale = std::max(scale, std::abs(runtime::element_as_double(expected, i)));
  const double atol = 1e-4 * scale;
  double worst = -1;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double e = runtime::element_as_double(expected, i), a = runtime::element_as_double(actual, i);
    bool ok;
    if (t.is_float()) ok = e == a || (std::isnan(e) && std::isnan(a)) || std::abs(a - e) <= atol + rtol * std::abs(e);
    else
      ok = std::memcmp(static_cast<const char*>(expected.data()) + i * bytes,
                       static_cast<const char*>(actual.data()) + i * bytes, bytes) == 0;
    double err = std::isnan(a - e) ? INFINITY : std::abs(a - e);
    if (!ok && err > worst) worst = err, worst_at = i;
  }
  if (worst_at < 0) return "";
  std::ostringstream os;
  os << "wrong result: max abs error " << worst << " at element " << worst_at << " of output " << output
     << " (expected " << runtime::element_as_double(expected, worst_at) << ", got "
     << runtime::element_as_double(actual, worst_at) << ")";
  return os.str();
}

// Overwrites a buffer larger than the last-level cache (32 MiB on the machines we tune on; twice
// that, since caches do not evict strictly least-recently-used), so the next run starts cold.
void flush_cache() {
  static std::vector<char> buffer(64 << 20);
  static char fill = 0;
  std::memset(buffer.data(), ++fill, buffer.size());
  asm volatile("" : : "r"(buffer.data()) : "memory");  // the stores must happen
}

// What the candidates of one kernel run on: the task rebuilt from its text, random inputs, and
// the outputs its default schedule computes from them (with check; computed on first need).
struct Bench {
  std::string kernel, target_text;
  uint64_t seed = 0;
  autotune::Task task;
  targets::Target target;
  std::vector<tensor_ir::Tensor> args;      // the kernel's arguments: inputs, then outputs
  std::vector<runtime::NDArray> buffers;    // the same: random inputs, then candidates' outputs
  std::vector<runtime::NDArray> expected;   // the default schedule's outputs; empty until checked
  std::vector<size_t> written;              // inputs rewritten before each timed call
  std::vector<runtime::NDArray> originals;  // their values, one per entry of `written`
  std::optional<runtime::Device> device;    // a device target's device; none for the CPU
  std::vector<runtime::NDArray> on_device;  // there: copies of `buffers`
  size_t num_inputs() const { return task.compute.inputs.size(); }
};

// A candidate compiled: a CPU kernel, or a device program for a device target.
struct Compiled {
  runtime::Kernel kernel;
  std::shared_ptr<const runtime::DeviceProgram> program;

  // One call on the bench's buffers; a device's outputs are copied back to the host's.
  void operator()(Bench& b) const {
    if (!program) return kernel(b.buffers);
    for (size_t i = b.num_inputs(); i < b.buffers.size(); ++i) b.on_device[i].copy_from(b.buffers[i]);
    (*program)(b.on_device);
    for (size_t i = b.num_inputs(); i < b.buffers.size(); ++i) b.buffers[i].copy_from(b.on_device[i]);
  }
};

// Writes the written inputs' values again, each thread a contiguous share as an elementwise
// kernel stores its output, so the next call reads them from where the kernel before it in a
// model leaves them: just written, spread over the cores.
void rewrite_inputs(Bench& b) {
  for (size_t w = 0; w < b.written.size(); ++w)
    runtime::parallel_copy(b.buffers[b.written[w]].data(), b.originals[w].data(), b.originals[w].nbytes());
}

// Each run's N calls queued back to back on the device, timed by its events.
std::vector<double> time_device_runs(const runtime::DeviceProgram& program, Bench& b, const Request& r) {
  runtime::DeviceAPI& api = runtime::DeviceAPI::get(*b.device);
  auto run_ms = [&](int number) {
    auto start = api.record_event();
    for (int n = 0; n < number; ++n) program(b.on_device, false);
    auto end = api.record_event();
    return api.elapsed_ms(*start, *end);
  };
  int number = r.number;
  if (number <= 0) number = static_cast<int>(std::clamp(std::ceil(r.min_repeat_ms / std::max(run_ms(1), 1e-6)), 1.0, 1e6));
  std::vector<double> costs;
  for (int i = 0; i < r.repeat; ++i) costs.push_back(run_ms(number) * 1e-3 / number);
  return costs;
}

std::vector<double> time_runs(const Compiled& compiled, Bench& b, const Request& r) {
  if (compiled.program) return time_device_runs(*compiled.program, b, r);
  const runtime::Kernel& kernel = compiled.kernel;
  std::vector<void*> data;
  for (const auto& a : b.buffers) data.push_back(a.data());
  // A run makes `number` calls or, without one, calls until it has lasted min_repeat_ms, so timer
  // resolution and call overhead do not show in short kernels' costs. Counting calls from a first
  // one's time instead let a machine that slowed down mid-run (another process taking a core the
  // kernel's threads wait for) stretch a run of microsecond calls past the worker's timeout.
  const double min_run_seconds = r.min_repeat_ms * 1e-3;
  auto run_done = [&](int calls, Clock::time_point start) {
    return r.number > 0 ? calls >= r.number : seconds_since(start) >= min_run_seconds;
  };
  if (r.number <= 0) kernel.call_unchecked(data.data());  // warm: code and data in the caches
  std::vector<double> costs;
  for (int i = 0; i < r.repeat; ++i) {
    if (r.flush_cache) flush_cache();
    double total = 0;
    int calls = 0;
    auto start = Clock::now();
    if (b.written.empty()) {
      do kernel.call_unchecked(data.data());
      while (!run_done(++calls, start));
      total = seconds_since(start);
    } else {
      // Each call timed alone, after its inputs were rewritten.
      do {
        rewrite_inputs(b);
        auto t0 = Clock::now();
        kernel.call_unchecked(data.data());
        total += seconds_since(t0);
      } while (!run_done(++calls, start));
    }
    costs.push_back(total / calls);
  }
  return costs;
}

runtime::NDArray allocate(const tensor_ir::Tensor& t) {
  std::vector<int64_t> shape;
  for (size_t d = 0; d < t.ndim(); ++d) shape.push_back(t->dim(d));
  return runtime::NDArray::empty(shape, t.dtype());
}

Compiled compile(schedule::Schedule& s, const Bench& b, const std::string& name, std::string& stage) {
  stage = "lower: ";
  const schedule::HardwareParams& hardware = b.task.compute.hardware;
  tensor_ir::LoweredFunc f = hardware.is_gpu() ? schedule::lower_for_device(s, b.args, name, hardware.gpu.warp_size)
                                               : schedule::lower(s, b.args, name);
  stage = "compile: ";
  std::shared_ptr<runtime::Module> module = targets::build({f}, b.target);
  if (b.device) return {{}, module->device_program(name)};
  return {module->get_kernel(name), nullptr};
}

void setup(Bench& b, const Request& r) {
  if (b.kernel != r.kernel || b.target_text != r.target || b.seed != r.seed) {
    b = Bench();
    schedule::HardwareParams hardware;
    try {
      b.target = targets::Target::parse(r.target);
      hardware = b.target.hardware();
    } catch (const std::exception& e) {
      fail("target: ", e.what());
    }
    try {
      b.task = autotune::task_from_kernel(r.kernel, hardware);
    } catch (const std::exception& e) {
      fail("kernel: ", e.what());
    }
    if (b.target.device_type() != runtime::DeviceType::CPU) {
      try {
        b.device = targets::device_of(b.target);
      } catch (const std::exception& e) {
        fail("device: ", e.what());
      }
    }
    b.args = b.task.compute.inputs;
    b.args.insert(b.args.end(), b.task.compute.outputs.begin(), b.task.compute.outputs.end());
    std::mt19937_64 rng(r.seed);
    for (const auto& t : b.args) {
      b.buffers.push_back(allocate(t));
      if (b.buffers.size() <= b.num_inputs()) fill_random(b.buffers.back(), rng);
      if (b.device) b.on_device.push_back(b.buffers.back().copy_to(*b.device));
    }
    b.kernel = r.kernel, b.target_text = r.target, b.seed = r.seed;
  }
  if (!b.device && b.written != r.written_inputs) {
    b.written.clear();
    b.originals.clear();
    for (size_t i : r.written_inputs) {
      if (i >= b.num_inputs()) fail("written input ", i, ": the kernel has ", b.num_inputs(), " inputs");
      b.originals.push_back(runtime::NDArray::empty(b.buffers[i].shape(), b.buffers[i].dtype()));
      std::memcpy(b.originals.back().data(), b.buffers[i].data(), b.buffers[i].nbytes());
    }
    b.written = r.written_inputs;
  }
  if (!r.check || !b.expected.empty()) return;
  std::string stage = "schedule: ";
  try {
    const auto& c = b.task.compute;
    auto s = schedule::default_schedule(c.outputs, c.anchor, c.hardware);
    Compiled k = compile(*s, b, "reference", stage);
    stage = "run: ";
    k(b);
    for (size_t i = b.num_inputs(); i < b.args.size(); ++i) b.expected.push_back(b.buffers[i].copy_to(runtime::Device::cpu()));
  } catch (const std::exception& e) {
    fail("reference (default schedule): ", stage, e.what());
  }
}

#ifdef TESSERA_MEASURE_TEST_FAULTS
// Test builds only (tests/autotune builds this file a second time as tessera-measure-faulty): the
// candidate "test:segv" crashes this worker, "test:hang" hangs it, and "test:wrong" is the
// default schedule with 1 added to element 7 of its first (float32) output, so that the
// measurer's handling of each can be tested on a real process.
bool take_test_fault(std::string& trace, const Bench& b) {
  if (trace == "test:segv") raise(SIGSEGV);
  if (trace == "test:hang")
    for (;;) pause();
  if (trace != "test:wrong") return false;
  trace = autotune::default_trace(b.task);
  return true;
}
#endif

json measure(Bench& b, const Request& r, std::string trace) {
  json out = {{"costs", json::array()}, {"compile_seconds", 0.0}, {"error", ""}};
  std::string stage = "replay: ";
  try {
#ifdef TESSERA_MEASURE_TEST_FAULTS
    bool corrupt = take_test_fault(trace, b);
#endif
    auto t0 = Clock::now();
    autotune::Record record;
    record.trace = trace;
    auto s = autotune::schedule_from_record(record, b.task.compute.outputs);
    Compiled kernel = compile(*s, b, "candidate", stage);
    out["compile_seconds"] = seconds_since(t0);
    stage = "run: ";
    // A pattern no kernel computes by chance, so outputs a candidate fails to write are caught.
    for (size_t i = b.num_inputs(); i < b.buffers.size(); ++i)
      std::memset(b.buffers[i].data(), 0x5a, b.buffers[i].nbytes());
    kernel(b);
#ifdef TESSERA_MEASURE_TEST_FAULTS
    if (corrupt) b.buffers[b.num_inputs()].data_as<float>()[7] += 1;
#endif
    for (size_t o = 0; r.check && o < b.expected.size(); ++o) {
      std::string wrong = compare(b.expected[o], b.buffers[b.num_inputs() + o], o);
      if (!wrong.empty()) {
        out["error"] = wrong;
        return out;
      }
    }
    out["costs"] = time_runs(kernel, b, r);
  } catch (const std::exception& e) {
    out["costs"] = json::array();
    out["error"] = stage + e.what();
  }
  return out;
}

}  // namespace

int main() {
  // Generated code and LLVM may print to stdout; answers get a descriptor of their own and stdout
  // goes to stderr, so nothing stray can corrupt the protocol.
  const int protocol = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  Bench bench;
  for (std::string line; std::getline(std::cin, line);) {
    if (line.empty()) continue;
    Request request;
    try {
      auto t0 = Clock::now();
      request = parse_request(line);
      setup(bench, request);
      answer(protocol, {{"ready", true}, {"setup_seconds", seconds_since(t0)}});
    } catch (const json::exception& e) {
      answer(protocol, {{"ready", false}, {"error", std::string("request: ") + e.what()}});
      continue;
    } catch (const std::exception& e) {
      bench = Bench();
      answer(protocol, {{"ready", false}, {"error", e.what()}});
      continue;
    }
    for (size_t i = 0; i < request.candidates.size(); ++i) {
      json result = measure(bench, request, request.candidates[i]);
      result["index"] = i;
      answer(protocol, result);
    }
  }
  return 0;
}
