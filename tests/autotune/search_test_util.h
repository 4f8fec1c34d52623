// Kernels the search tests share (as graph-IR text, the way tuning tasks arrive) and helpers to
// compile a schedule candidate and run it on random inputs.
#pragma once
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autotune/search_space.h"
#include "autotune/task.h"
#include "runtime/ndarray.h"
#include "targets/build.h"
#include "targets/target.h"
#include "tensor_ir/op.h"

namespace tessera::autotune::testing {

// This machine's registers, as the host target describes them.
inline schedule::HardwareParams host_hardware() { return targets::Target::parse("llvm").hardware(); }
// AVX-512's registers (16 float lanes), for rules that depend on the vector width whatever the host.
inline schedule::HardwareParams avx512_hardware() {
  return targets::Target::parse("llvm -mcpu=skylake-avx512").hardware();
}
// A task for the host target from its kernel text.
inline Task host_task(const std::string& kernel_text) { return task_from_kernel(kernel_text, host_hardware()); }

// A kernel module in the form extract_tasks gives: main calls one op or one fused function.
inline std::string kernel(const std::string& params, const std::string& result, const std::string& body,
                          const std::string& args) {
  return "def @main(" + params + ") -> " + result + " {\n" + body + "\n  " + "%0(" + args + ")\n}\n";
}

inline Task matmul_task(int64_t m, int64_t n, int64_t k) {
  std::string a = "float32[" + std::to_string(m) + ", " + std::to_string(k) + "]";
  std::string b = "float32[" + std::to_string(k) + ", " + std::to_string(n) + "]";
  std::string c = "float32[" + std::to_string(m) + ", " + std::to_string(n) + "]";
  return host_task("def @main(%p0: " + a + ", %p1: " + b + ") -> " + c +
                   " {\n  matmul(%p0, %p1, packed_columns=0)\n}\n");
}

// conv 3x3 with padding, then bias and relu: a fused group (padding producer, epilogue consumer).
inline Task conv_task() {
  return host_task(kernel(
      "%p0: float32[1, 16, 14, 14], %p1: float32[32, 16, 3, 3], %p2: float32[1, 32, 1, 1]", "float32[1, 32, 14, 14]",
      "  %0 = fn [primitive=1] (%a: float32[1, 16, 14, 14], %w: float32[32, 16, 3, 3], %b: float32[1, 32, 1, 1]) -> "
      "float32[1, 32, 14, 14] {\n"
      "    %1 = conv(%a, %w, dilations=[], groups=1, packed_channels=0, pads=[1, 1, 1, 1], strides=[]);\n"
      "    %2 = add(%1, %b);\n"
      "    relu(%2)\n"
      "  };",
      "%p0, %p1, %p2"));
}

// MobileNet's depthwise 3x3 with stride 2, then clip (ReLU6): phase-split padded input, a block
// of rows per product (15 rows of outputs: the product pads them to 16).
inline Task depthwise_task() {
  return host_task(kernel(
      "%p0: float32[1, 24, 29, 29], %p1: float32[24, 1, 3, 3]", "float32[1, 24, 15, 15]",
      "  %0 = fn [primitive=1] (%a: float32[1, 24, 29, 29], %w: float32[24, 1, 3, 3]) -> float32[1, 24, 15, 15] {\n"
      "    %1 = conv(%a, %w, dilations=[], groups=24, packed_channels=0, pads=[1, 1, 1, 1], strides=[2, 2]);\n"
      "    clip(%1, a_max=6, a_min=0)\n"
      "  };",
      "%p0, %p1"));
}

inline Task elementwise_task() {
  return host_task("def @main(%p0: float32[24, 100]) -> float32[24, 100] {\n  sigmoid(%p0)\n}\n");
}

inline Task softmax_task() {
  return host_task("def @main(%p0: float32[12, 300]) -> float32[12, 300] {\n  softmax(%p0, axis=-1, trailing=0)\n}\n");
}

inline Task reduce_task() {
  return host_task(
      "def @main(%p0: float32[4, 8, 10, 12]) -> float32[4, 8, 1, 1] {\n  reduce_sum(%p0, axes=[2, 3], "
      "keepdims=1)\n}\n");
}

// add, exp, mul fused: the add is always inlined, the exp's place is sampled.
inline Task fused_elementwise_task() {
  return host_task(kernel("%p0: float32[16, 200], %p1: float32[16, 200]", "float32[16, 200]",
                          "  %0 = fn [primitive=1] (%a: float32[16, 200], %b: float32[16, 200]) -> float32[16, 200] {\n"
                          "    %1 = add(%a, %b);\n"
                          "    %2 = exp(%1);\n"
                          "    mul(%2, %a)\n"
                          "  };",
                          "%p0, %p1"));
}

// matmul with bias and relu fused: the product is computed at the tiles of the relu.
inline Task dense_task() {
  return host_task(kernel(
      "%p0: float32[24, 40], %p1: float32[40, 48], %p2: float32[48]", "float32[24, 48]",
      "  %0 = fn [primitive=1] (%a: float32[24, 40], %w: float32[40, 48], %b: float32[48]) -> float32[24, 48] {\n"
      "    %1 = matmul(%a, %w, packed_columns=0);\n"
      "    %2 = add(%1, %b);\n"
      "    relu(%2)\n"
      "  };",
      "%p0, %p1, %p2"));
}

// C = A·B written directly in the DSL: the output accumulates itself (no packing, no epilogue),
// which is where the cache_write variant applies.
inline Task te_gemm_task(int64_t n) {
  using namespace tensor_ir;
  Tensor a = placeholder({Expr(n), Expr(n)}, runtime::kFloat32, "A");
  Tensor b = placeholder({Expr(n), Expr(n)}, runtime::kFloat32, "B");
  IterVar k = reduce_axis(Range(Expr(0), Expr(n)), "k");
  Tensor c = compute(
      {Expr(n), Expr(n)}, [&](const std::vector<Var>& i) { return sum(a(i[0], k) * b(k, i[1]), {k}); }, "C", "matmul");
  Task t;
  t.compute.inputs = {a, b};
  t.compute.outputs = {c};
  t.compute.hardware = host_hardware();
  t.workload.key = "te_gemm_" + std::to_string(n);
  return t;
}

inline std::vector<Task> all_tasks() {
  return {matmul_task(48, 64, 32),  conv_task(),  depthwise_task(), elementwise_task(), softmax_task(), reduce_task(),
          fused_elementwise_task(), dense_task(), te_gemm_task(40)};
}

// The same task for other hardware (a GPU's): rebuilt from its kernel text, or for a task written
// in the DSL, its compute given that hardware.
inline Task for_hardware(const Task& t, const schedule::HardwareParams& hardware) {
  if (t.kernel.empty()) {
    Task copy = t;
    copy.compute.hardware = hardware;
    return copy;
  }
  return task_from_kernel(t.kernel, hardware);
}

// Random inputs (fixed seed) and zeroed outputs shaped like the kernel's arguments.
inline std::vector<runtime::NDArray> make_args(const SearchSpace& space, unsigned seed) {
  std::vector<runtime::NDArray> args;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto add = [&](const tensor_ir::Tensor& t, bool fill) {
    std::vector<int64_t> shape;
    for (size_t d = 0; d < t.ndim(); ++d) shape.push_back(t->dim(d));
    runtime::NDArray a = runtime::NDArray::empty(shape, t.dtype());
    if (fill)
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = dist(gen);
    args.push_back(a);
  };
  for (const auto& t : space.compute().inputs) add(t, true);
  for (const auto& t : space.compute().outputs) add(t, false);
  return args;
}

// Runs `c` on `args` (its outputs are overwritten).
inline void run(const SearchSpace& space, const Candidate& c, const std::vector<runtime::NDArray>& args) {
  auto s = space.apply(c);
  auto f = space.lower(*s, "kernel");
  targets::build({f}, targets::Target::parse("llvm"))->get_kernel("kernel")(args);
}

inline double max_abs_diff(const runtime::NDArray& a, const runtime::NDArray& b) {
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    d = std::max(d, std::fabs(double(a.data_as<float>()[i]) - b.data_as<float>()[i]));
  return d;
}

}  // namespace tessera::autotune::testing
