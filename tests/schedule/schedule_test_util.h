// Helpers for schedule tests: a matmul definition, compiling a schedule, filling arrays.
#pragma once
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"
#include "targets/build.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::schedule::testing {

using namespace tensor_ir;
using runtime::NDArray;
using tessera::Error;

struct Matmul {
  Tensor A, B, C;
  IterVar k;
  int64_t n, m, kk;
};

inline Matmul matmul(int64_t n, int64_t m, int64_t k) {
  Matmul mm;
  mm.n = n;
  mm.m = m;
  mm.kk = k;
  mm.A = placeholder({Expr(n), Expr(k)}, runtime::kFloat32, "A");
  mm.B = placeholder({Expr(k), Expr(m)}, runtime::kFloat32, "B");
  mm.k = reduce_axis(Range(Expr(0), Expr(k)), "k");
  mm.C = compute(
      {Expr(n), Expr(m)}, [&](const std::vector<Var>& i) { return sum(mm.A(i[0], mm.k) * mm.B(mm.k, i[1]), {mm.k}); },
      "C");
  return mm;
}

inline NDArray random_array(std::vector<int64_t> shape, unsigned seed) {
  NDArray a = NDArray::empty(std::move(shape), runtime::kFloat32);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = dist(gen);
  return a;
}

// Compiles and runs `s` on `args`, returning the function it lowered to.
inline LoweredFunc run(Schedule& s, const std::vector<Tensor>& tensors, const std::vector<NDArray>& args) {
  LoweredFunc f = lower(s, tensors, "kernel");
  auto module = targets::build({f}, targets::Target::parse("llvm"));
  module->get_kernel("kernel")(args);
  return f;
}

// Max |C - A·B| for row-major float arrays.
inline double matmul_error(const Matmul& mm, const NDArray& a, const NDArray& b, const NDArray& c) {
  double err = 0;
  for (int64_t i = 0; i < mm.n; ++i)
    for (int64_t j = 0; j < mm.m; ++j) {
      double ref = 0;
      for (int64_t r = 0; r < mm.kk; ++r)
        ref += double(a.data_as<float>()[i * mm.kk + r]) * b.data_as<float>()[r * mm.m + j];
      err = std::max(err, std::fabs(ref - c.data_as<float>()[i * mm.m + j]));
    }
  return err;
}

inline bool contains(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

// A matmul schedule per primitive, with pieces its lowered text must contain.
struct Case {
  const char* name;
  void (*apply)(Schedule&, const Matmul&);
  std::vector<std::string> expect;  // pieces of the lowered text
  bool device = false;              // lowered with lower_for_device
};

// The case's schedule lowered as it asks (for a CPU or a device).
inline LoweredFunc lower_case(const Case& c, Schedule& s, const std::vector<Tensor>& args) {
  return c.device ? lower_for_device(s, args) : lower(s, args);
}

inline Stage& C(Schedule& s, const Matmul& mm) { return s[mm.C]; }

inline const std::vector<Case>& schedule_cases() {
  static const std::vector<Case> cases = {
      {"naive", [](Schedule&, const Matmul&) {}, {"for (i, 0, 19)", "for (k, 0, 11)"}},
      {"split",
       [](Schedule& s, const Matmul& mm) { C(s, mm).split(C(s, mm).loop("j"), 8); },
       {"for (j.outer, 0, 4)", "for (j.inner, 0, 8)", "for (j.inner, 0, 5)"}},
      {"split_nparts",
       [](Schedule& s, const Matmul& mm) { C(s, mm).split_nparts(C(s, mm).loop("i"), 3); },
       {"for (i.outer, 0, 2)", "for (i.inner, 0, 7)", "for (i.inner, 0, 5)"}},
      {"tile",
       [](Schedule& s, const Matmul& mm) { C(s, mm).tile(C(s, mm).loop("i"), C(s, mm).loop("j"), 4, 16); },
       {"for (i.outer, 0, 4)", "for (j.outer, 0, 2)", "for (i.inner, 0, 4)", "for (j.inner, 0, 16)"}},
      {"fuse",
       [](Schedule& s, const Matmul& mm) { C(s, mm).fuse(C(s, mm).loop("i"), C(s, mm).loop("j")); },
       {"for (i.j.fused, 0, 703)"}},
      {"reorder",
       [](Schedule& s, const Matmul& mm) {
         C(s, mm).reorder({C(s, mm).loop("k"), C(s, mm).loop("i")});
       },
       {"for (k, 0, 11) {\n    for (j, 0, 37) {\n      for (i, 0, 19)"}},
      {"vectorize",
       [](Schedule& s, const Matmul& mm) {
         auto [jo, ji] = C(s, mm).split(C(s, mm).loop("j"), 16);
         C(s, mm).vectorize(ji);
       },
       {"ramp(", "x16(", "16)] = "}},
      {"unroll",
       [](Schedule& s, const Matmul& mm) {
         auto [ko, ki] = C(s, mm).split(C(s, mm).loop("k"), 4);
         C(s, mm).unroll(ki);
       },
       {"unrolled (k.inner, 0, 4)", "unrolled (k.inner, 0, 3)"}},
      {"parallel",
       [](Schedule& s, const Matmul& mm) { C(s, mm).parallel(C(s, mm).loop("i")); },
       {"parallel (i, 0, 19)"}},
      {"pragma",
       [](Schedule& s, const Matmul& mm) { C(s, mm).pragma(C(s, mm).loop("k"), "unroll_max", 8); },
       {"// pragma unroll_max = 8"}},
      {"cache_write_compute_at",
       [](Schedule& s, const Matmul& mm) {
         Tensor cc = s.cache_write(mm.C, "local");
         auto loops = C(s, mm).tile(C(s, mm).loop("i"), C(s, mm).loop("j"), 8, 16);
         s[cc].compute_at(C(s, mm), loops[1]);
         s[cc].vectorize(s[cc].loop("j"));
       },
       {"allocate C.local: float32[128]", "C.local[ramp(i*16, 1, 16)]"}},
      {"cache_read",
       [](Schedule& s, const Matmul& mm) {
         Tensor bl = s.cache_read(mm.B, "local", {mm.C});
         auto [jo, ji] = C(s, mm).split(C(s, mm).loop("j"), 8);
         C(s, mm).reorder({jo, C(s, mm).loop("i"), C(s, mm).loop("k"), ji});
         s[bl].compute_at(C(s, mm), jo);
       },
       {"allocate B.local: float32[88]", "B.local[ax0*8 + ax1]"}},
      {"compute_root",
       [](Schedule& s, const Matmul& mm) {
         Tensor bl = s.cache_read(mm.B, "local", {mm.C});
         s[bl].compute_at(C(s, mm), C(s, mm).loop("i"));
         s[bl].compute_root();
       },
       {"allocate B.local: float32[407]"}},
      {"compute_inline",
       [](Schedule& s, const Matmul& mm) {
         Tensor bl = s.cache_read(mm.B, "local", {mm.C});
         s[bl].compute_inline();
       },
       {"A[i*11 + k]*B[k*37 + j]"}},
      {"rfactor",
       [](Schedule& s, const Matmul& mm) {
         auto [ko, ki] = C(s, mm).split(C(s, mm).loop("k"), 4);
         Tensor rf = s.rfactor(mm.C, ki);
         s[rf].compute_at(C(s, mm), C(s, mm).loop("j"));
       },
       {"allocate C.rf: float32[4]", "C.rf[k.inner]"}},
      {"prefetch",
       [](Schedule& s, const Matmul& mm) {
         // Rows of A the next block of 4 reads (4 x 11 floats: 3 lines), a line per step of k
         // over the 4 x 37 x 11 steps of the block before.
         auto [io, ii] = C(s, mm).split(C(s, mm).loop("i"), 4);
         C(s, mm).prefetch(mm.A, C(s, mm).loop("k"), C(s, mm), io, 1);
       },
       {"prefetch(A[i.outer*44 + (i.inner*1221 + j*33 + k*3) // 1628*16 + 44])\n          C["}},
      {"prefetch_along_a_fused_loop",
       [](Schedule& s, const Matmul& mm) {
         // The next block of 4 rows of A is one step of i.outer, fused outside j.outer's 5
         // steps: 5 steps ahead on the fused loop, whose 5 x 4 x 8 x 11 steps take a share each.
         auto [io, ii] = C(s, mm).split(C(s, mm).loop("i"), 4);
         auto [jo, ji] = C(s, mm).split(C(s, mm).loop("j"), 8);
         C(s, mm).reorder({io, jo, ii, ji});
         C(s, mm).fuse(io, jo);
         C(s, mm).prefetch(mm.A, C(s, mm).loop("k"), C(s, mm), io, 1);
       },
       {"prefetch(A[i.outer.j.outer.fused // 5*44 + (i.outer.j.outer.fused % 5*1056 + i.inner*264 + j.inner*33 + "
        "k*3) // 1760*16 + 44])"}},
      {"prefetch_rows_of_runs",
       [](Schedule& s, const Matmul& mm) {
         // Columns of B the next block of 8 reads: 11 rows of 8 floats, a line each, one per 8
         // of the 8 x 11 steps of the block before.
         auto [jo, ji] = C(s, mm).split(C(s, mm).loop("j"), 8);
         C(s, mm).prefetch(mm.B, C(s, mm).loop("k"), C(s, mm), jo, 1);
       },
       {"prefetch(B[(j.inner*11 + k) // 8*37 + j.outer*8 + 8])"}},
      {"storage_align",
       [](Schedule& s, const Matmul& mm) {
         Tensor cc = s.cache_write(mm.C, "local");
         auto [io, ii] = C(s, mm).split(C(s, mm).loop("i"), 4);
         s[cc].compute_at(C(s, mm), io);
         s[cc].set_storage_align(0, 16, 1);
       },
       {"allocate C.local: float32[184]", "C.local[i*49 + j]"}},
      {"bind",
       [](Schedule& s, const Matmul& mm) {
         auto [io, ii] = C(s, mm).split(C(s, mm).loop("i"), 4);
         C(s, mm).bind(io, "blockIdx.x");
         C(s, mm).bind(ii, "threadIdx.x");
       },
       {"launch_thread (i.outer = blockIdx.x, 5) {\n    launch_thread (i.inner = threadIdx.x, 4) {\n      for (j, 0, "
        "37) {\n        if (i.outer*4 + i.inner < 19) {\n          C[i.outer*148 + i.inner*37 + j] = 0.0f"},
       true},
      {"vthread",
       [](Schedule& s, const Matmul& mm) {
         auto [jo, ji] = C(s, mm).split(C(s, mm).loop("j"), 8);
         C(s, mm).reorder({jo, C(s, mm).loop("i"), ji});
         C(s, mm).bind(jo, "vthread");
       },
       {"unrolled (j.outer, 0, 4)"}},
      {"set_scope",
       [](Schedule& s, const Matmul& mm) {
         // A's rows of a block in shared memory, filled cooperatively by the block's 4 threads at
         // each step of j: 4 rows of 11, a row per thread from those its threads read.
         Tensor as = s.cache_read(mm.A, "local", {mm.C});
         s[as].set_scope("shared");
         auto [io, ii] = C(s, mm).split(C(s, mm).loop("i"), 4);
         C(s, mm).bind(io, "blockIdx.x");
         C(s, mm).bind(ii, "threadIdx.x");
         s[as].compute_at(C(s, mm), C(s, mm).loop("j"));
         Loop fused = s[as].fuse(s[as].loop("ax0"), s[as].loop("ax1"));
         auto [fo, fi] = s[as].split(fused, 4);
         s[as].bind(fi, "threadIdx.x");
       },
       {"allocate A.local: float32[44] (shared)",
        "for (j, 0, 37) {\n        barrier()\n        for (ax0.ax1.fused.outer",
        "A.local[ax0.ax1.fused.outer*4 + i.inner] = A[", "barrier()\n        for (k, 0, 11)",
        "A.local[i.inner*11 + k]"},
       true},
  };
  return cases;
}

}  // namespace tessera::schedule::testing
