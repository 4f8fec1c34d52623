// A Select reads memory only on the side it picks. Each kernel here guards loads that would read
// outside their buffer, and its buffers sit between inaccessible pages, so one stray read faults.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "kernel_builder.h"
#include "runtime/half.h"

namespace tessera::targets::testing {
namespace {

using runtime::kFloat32;
using runtime::kInt64;

// One page of T between two PROT_NONE pages: reading the element before the first or after the
// last faults.
template <typename T>
class FencedArray {
 public:
  FencedArray() {
    void* p = mmap(nullptr, 3 * page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    region_ = static_cast<char*>(p);
    if (mprotect(region_, page(), PROT_NONE) != 0 || mprotect(region_ + 2 * page(), page(), PROT_NONE) != 0)
      throw std::runtime_error("mprotect failed");
  }
  ~FencedArray() { munmap(region_, 3 * page()); }
  FencedArray(const FencedArray&) = delete;
  FencedArray& operator=(const FencedArray&) = delete;

  static int64_t size() { return static_cast<int64_t>(page() / sizeof(T)); }
  T* data() { return reinterpret_cast<T*>(region_ + page()); }
  T& operator[](int64_t i) { return data()[i]; }

 private:
  static size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
  char* region_;
};

// Runs `kernel` in a child process first, so a stray read fails this test (the child dies of
// SIGSEGV) instead of killing the test program; then here, for the results.
void run_fenced(const LoweredFunc& f, std::vector<void*> args, const std::string& target = "llvm") {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the runtime may have started threads
  runtime::Kernel kernel = compile(f, target);
  const auto n = static_cast<int32_t>(args.size());
  ASSERT_EXIT(std::exit(kernel.function()(args.data(), n)), ::testing::ExitedWithCode(0), "");
  ASSERT_EQ(kernel.function()(args.data(), n), 0);
}

// A 64-byte aligned output, as kernels require.
struct Output {
  NDArray array;
  explicit Output(int64_t n) : array(NDArray::empty({n}, kFloat32)) {}
  float* data() { return static_cast<float*>(array.data()); }
  float operator[](int64_t i) { return data()[i]; }
};

std::vector<float> padded(FencedArray<float>& x, int64_t pad, int64_t m, float outside) {
  std::vector<float> out(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j) out[j] = j >= pad && j < x.size() + pad ? x[j - pad] : outside;
  return out;
}

void fill(FencedArray<float>& x) {
  for (int64_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k % 97) - 40.0f;
}

constexpr int64_t kLanes = 16;
constexpr int64_t kPad = 8;  // half a vector: the border vectors straddle the buffer's ends

TEST(LazySelect, VectorSelectReadsOnlyTheLanesItPicks) {
  // Zero padding as lowering leaves it: P[j] = select(pad <= j < n + pad, X[j - pad], 0), with the
  // loads in the true branch (P), in the false branch (Q), and under a scalar condition (R).
  FencedArray<float> x;
  fill(x);
  const int64_t n = x.size(), m = n + 2 * kPad;
  Buffer X = make_buffer("X", kFloat32, {n}), P = make_buffer("P", kFloat32, {m}), Q = make_buffer("Q", kFloat32, {m}),
         R = make_buffer("R", kFloat32, {m});
  Var jo("jo");
  Expr j = ramp(jo * kLanes, kLanes);
  Expr xv = load(X, ramp(jo * kLanes - kPad, kLanes));
  Expr inside = logical_and(j >= kPad, j < n + kPad);
  Expr whole_vector_inside = logical_and(jo >= 1, jo < m / kLanes - 1);  // scalar
  Stmt body = Block::make({store(P, select(inside, xv * 2 + 1, f32(0)), j),
                           store(Q, select(logical_not(inside), f32(-1), xv - 1), j),
                           store(R, select(whole_vector_inside, xv, f32(5)), j)});
  Output p(m), q(m), r(m);
  ASSERT_NO_FATAL_FAILURE(
      run_fenced({"pad_vec", {X, P, Q, R}, loop(jo, m / kLanes, body)}, {x.data(), p.data(), q.data(), r.data()}));
  std::vector<float> ref = padded(x, kPad, m, 0);
  for (int64_t k = 0; k < m; ++k) {
    const bool in = k >= kPad && k < n + kPad;
    ASSERT_EQ(p[k], in ? ref[k] * 2 + 1 : 0.0f) << k;
    ASSERT_EQ(q[k], in ? ref[k] - 1 : -1.0f) << k;
    ASSERT_EQ(r[k], k >= kLanes && k < m - kLanes ? ref[k] : 5.0f) << k;
  }
}

TEST(LazySelect, ScalarSelectReadsOnlyTheSideItPicks) {
  // The scalar loop of the same padding (which LLVM may vectorize itself), both branches.
  FencedArray<float> x;
  fill(x);
  const int64_t n = x.size(), pad = 3, m = n + 2 * pad;
  Buffer X = make_buffer("X", kFloat32, {n}), P = make_buffer("P", kFloat32, {m}), Q = make_buffer("Q", kFloat32, {m});
  Var j("j");
  Expr inside = logical_and(Expr(j) >= pad, Expr(j) < n + pad);
  Stmt body = Block::make({store(P, select(inside, load(X, j - pad), f32(0)), j),
                           store(Q, select(logical_not(inside), f32(-1), load(X, j - pad) * 3), j)});
  Output p(m), q(m);
  ASSERT_NO_FATAL_FAILURE(run_fenced({"pad_scalar", {X, P, Q}, loop(j, m, body)}, {x.data(), p.data(), q.data()}));
  std::vector<float> ref = padded(x, pad, m, 0);
  for (int64_t k = 0; k < m; ++k) {
    const bool in = k >= pad && k < n + pad;
    ASSERT_EQ(p[k], ref[k]) << k;
    ASSERT_EQ(q[k], in ? ref[k] * 3 : -1.0f) << k;
  }
}

TEST(LazySelect, NestedSelectsComposeTheirMasks) {
  // select(j >= pad, select(j < n + pad, X[j - pad] + 1, -1), -2): either condition alone lets a
  // read through at one end. Vector (P) and scalar (Q); the inner side also goes through a let,
  // a cast and a call. S reads a scalar under a vector condition: X[16 jo - 1], only for jo >= 1.
  // T's condition reads X[j - pad] only inside, so its true branch's read of it is still guarded.
  FencedArray<float> x;
  fill(x);
  const int64_t n = x.size(), m = n + 2 * kPad;
  Buffer X = make_buffer("X", kFloat32, {n}), P = make_buffer("P", kFloat32, {m}), Q = make_buffer("Q", kFloat32, {m}),
         S = make_buffer("S", kFloat32, {m}), T = make_buffer("T", kFloat32, {m});
  Var jo("jo"), i("i"), t("t", DataType::Float(32, kLanes));
  Expr j = ramp(jo * kLanes, kLanes);
  Expr xv = load(X, ramp(jo * kLanes - kPad, kLanes));
  Expr truncated = cast(DataType::Float(32, kLanes), cast(DataType::Int(32, kLanes), Expr(t)));
  Expr inner = Let::make(t, xv, abs(truncated) + 1);
  Expr vec = select(j >= kPad, select(j < n + kPad, inner, f32(-1)), f32(-2));
  Expr scalar = select(Expr(i) >= kPad, select(Expr(i) < n + kPad, load(X, i - kPad) + 1, f32(-1)), f32(-2));
  Expr last_before = load(X, Broadcast::make(jo * kLanes - 1, kLanes));
  Expr previous = select(Broadcast::make(jo >= 1, kLanes), last_before, f32(7));
  Expr positive = select(select(logical_and(j >= kPad, j < n + kPad), xv, f32(0)) > 0, xv * 2, f32(-3));
  Stmt vector_stores = Block::make({store(P, vec, j), store(S, previous, j), store(T, positive, j)});
  Stmt body = Block::make({loop(jo, m / kLanes, vector_stores), loop(i, m, store(Q, scalar, i))});
  Output p(m), q(m), s(m), tt(m);
  ASSERT_NO_FATAL_FAILURE(
      run_fenced({"nested", {X, P, Q, S, T}, body}, {x.data(), p.data(), q.data(), s.data(), tt.data()}));
  std::vector<float> ref = padded(x, kPad, m, 0);
  for (int64_t k = 0; k < m; ++k) {
    const float expected = k < kPad ? -2.0f : (k < n + kPad ? ref[k] + 1 : -1.0f);
    ASSERT_EQ(p[k], k < kPad || k >= n + kPad ? expected : std::abs(ref[k]) + 1) << k;
    ASSERT_EQ(q[k], expected) << k;
    ASSERT_EQ(s[k], k < kLanes ? 7.0f : x[k / kLanes * kLanes - 1]) << k;
    ASSERT_EQ(tt[k], ref[k] > 0 ? ref[k] * 2 : -3.0f) << k;
  }
}

TEST(LazySelect, GathersAndTheirIndicesAreMaskedToo) {
  // G[j] = select(inside, X[IDX[j - pad]], 0): the index load and the gather it feeds are both
  // guarded; H[j] = select(inside, X[2 (j - pad)], 0) is a strided gather.
  FencedArray<float> x;
  FencedArray<int64_t> idx;
  fill(x);
  const int64_t n = x.size(), ni = idx.size(), m = ni + 2 * kPad;
  for (int64_t k = 0; k < ni; ++k) idx[k] = (k * 7) % n;
  Buffer X = make_buffer("X", kFloat32, {n}), IDX = make_buffer("IDX", kInt64, {ni}),
         G = make_buffer("G", kFloat32, {m}), H = make_buffer("H", kFloat32, {m});
  Var jo("jo");
  Expr j = ramp(jo * kLanes, kLanes);
  Expr inside = logical_and(j >= kPad, j < ni + kPad);
  Expr gathered = load(X, load(IDX, ramp(jo * kLanes - kPad, kLanes)));
  Expr strided = load(X, ramp(jo * (2 * kLanes) - 2 * kPad, kLanes, 2));
  Stmt body =
      Block::make({store(G, select(inside, gathered, f32(0)), j), store(H, select(inside, strided, f32(0)), j)});
  Output g(m), h(m);
  ASSERT_NO_FATAL_FAILURE(
      run_fenced({"gather", {X, IDX, G, H}, loop(jo, m / kLanes, body)}, {x.data(), idx.data(), g.data(), h.data()}));
  for (int64_t k = 0; k < m; ++k) {
    const bool in = k >= kPad && k < ni + kPad;
    ASSERT_EQ(g[k], in ? x[idx[k - kPad]] : 0.0f) << k;
    ASSERT_EQ(h[k], in ? x[2 * (k - kPad)] : 0.0f) << k;
  }
}

TEST(StridedLoads, ReadNothingPastTheirLastElement) {
  // S[j] = X[stride * j + offset] for strides 2..4 (a wide masked load and a shuffle), the last
  // vector's last lane reading X's last element: a plain wide load would run into the fence.
  // Under a select (T), lanes whose condition is false read nothing either.
  FencedArray<float> x;
  fill(x);
  const int64_t n = x.size();
  for (int64_t stride : {2, 3, 4}) {
    const int64_t m = n / stride / kLanes * kLanes, offset = n - 1 - stride * (m - 1);
    Buffer X = make_buffer("X", kFloat32, {n}), S = make_buffer("S", kFloat32, {m}),
           T = make_buffer("T", kFloat32, {m});
    Var jo("jo");
    Expr j = ramp(jo * kLanes, kLanes);
    Expr read = load(X, ramp(jo * (stride * kLanes) + offset, kLanes, stride));
    Expr even = Broadcast::make(Expr(0), kLanes) == j - j / 2 * 2;
    Stmt body = Block::make({store(S, read, j), store(T, select(even, read, f32(-1)), j)});
    LoweredFunc f{"strided", {X, S, T}, loop(jo, m / kLanes, body)};
    Output s(m), t(m);
    ASSERT_NO_FATAL_FAILURE(run_fenced(f, {x.data(), s.data(), t.data()}));
    for (int64_t k = 0; k < m; ++k) {
      ASSERT_EQ(s[k], x[stride * k + offset]) << stride << " " << k;
      ASSERT_EQ(t[k], k % 2 == 0 ? x[stride * k + offset] : -1.0f) << stride << " " << k;
    }
    std::string ir = build_llvm({f}, Target::parse("llvm"))->source("ll");
    EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << stride;
    EXPECT_NE(ir.find("shufflevector"), std::string::npos) << stride;
  }
}

TEST(LazySelect, StorageTypesUnderMasks) {
  // float16 and bool are stored as half and i8, loaded masked too; on plain x86-64 (no masked
  // loads) LLVM reads lane by lane. O[j] = select(inside, select(B[j - pad], H[j - pad], 0), -1).
  FencedArray<uint16_t> h;  // half bits
  FencedArray<uint8_t> b;
  const int64_t n = h.size(), m = n + 2 * kPad;  // B has more elements: its end is not reached
  for (int64_t k = 0; k < n; ++k) {
    h[k] = runtime::float_to_half(k % 50 - 20);
    b[k] = k % 3 != 0;
  }
  const DataType f32x = DataType::Float(32, kLanes);
  Buffer H = make_buffer("H", runtime::kFloat16, {h.size()}), B = make_buffer("B", runtime::kBool, {b.size()}),
         O = make_buffer("O", kFloat32, {m});
  Var jo("jo");
  Expr j = ramp(jo * kLanes, kLanes), from = ramp(jo * kLanes - kPad, kLanes);
  Expr inside = logical_and(j >= kPad, j < n + kPad);
  Expr value = select(inside, select(load(B, from), cast(f32x, load(H, from)), f32(0)), f32(-1));
  for (const char* target : {"llvm", "llvm -mcpu=x86-64"}) {
    Output o(m);
    ASSERT_NO_FATAL_FAILURE(run_fenced({"storage", {H, B, O}, loop(jo, m / kLanes, store(O, value, j))},
                                       {h.data(), b.data(), o.data()}, target));
    for (int64_t k = 0; k < m; ++k) {
      const bool in = k >= kPad && k < n + kPad;
      ASSERT_EQ(o[k], !in ? -1.0f : (b[k - kPad] ? runtime::half_to_float(h[k - kPad]) : 0.0f)) << target << " " << k;
    }
  }
}

TEST(LazySelect, SelectsReadingNothingNewStayBlends) {
  // Selects between computed values, or over reads the condition makes itself (leaky ReLU), stay
  // selects (blends); one over another read becomes a masked load.
  const int64_t n = 64;
  Buffer A = make_buffer("A", kFloat32, {n}), C = make_buffer("C", kFloat32, {n});
  Var jo("jo"), t("t", DataType::Float(32, kLanes));
  Expr j = ramp(jo * kLanes, kLanes);
  Expr a = load(A, j);
  Stmt computed = store(C, Let::make(t, a, select(Expr(t) > 0, Expr(t) * 2, Expr(t) * 3)), j);
  Stmt leaky_relu = store(C, select(a > 0, a, a * f32(0.1)), j);
  for (const Stmt& body : {computed, leaky_relu}) {
    LoweredFunc blend{"blend", {A, C}, loop(jo, n / kLanes, body)};
    std::string ir = build_llvm({blend}, Target::parse("llvm"))->source("ll");
    EXPECT_NE(ir.find(" select "), std::string::npos) << ir;
    EXPECT_EQ(ir.find("masked"), std::string::npos) << ir;
  }
  Expr shifted = load(A, ramp(jo * kLanes - kPad, kLanes));
  LoweredFunc guarded{"guarded", {A, C}, loop(jo, n / kLanes, store(C, select(j >= kPad, shifted, f32(0)), j))};
  std::string ir = build_llvm({guarded}, Target::parse("llvm"))->source("ll");
  EXPECT_NE(ir.find("@llvm.masked.load.v16f32"), std::string::npos) << ir;
}

TEST(LazySelect, ConditionsAllLanesShareBranchOverCostlySides) {
  // A concat of computed inputs vectorized along another axis: select(jo < 2, tanh(X[j]), ...)
  // picks one side for the whole vector, which alone is computed (a branch, not masked loads on
  // both sides); a padding guard of one load under such a condition stays a masked load. The last vector's true side
  // would read past X's end.
  FencedArray<float> x;
  fill(x);
  const int64_t n = x.size(), vectors = n / kLanes;
  Buffer X = make_buffer("X", kFloat32, {n}), C = make_buffer("C", kFloat32, {n});
  Var jo("jo");
  Expr j = ramp(jo * kLanes, kLanes);
  Expr ahead = load(X, ramp(jo * kLanes + kPad, kLanes));
  Expr tanh_ahead = Call::make(DataType::Float(32, kLanes), Intrinsic::tanh, {ahead});
  Expr costly = select(jo < vectors - 1, tanh_ahead, load(X, j) * 2);
  LoweredFunc branch{"branch", {X, C}, loop(jo, vectors, store(C, costly, j))};
  std::string ir = build_llvm({branch}, Target::parse("llvm"))->source("ll");
  EXPECT_EQ(ir.find("masked"), std::string::npos) << ir;
  Output c(n);
  ASSERT_NO_FATAL_FAILURE(run_fenced(branch, {x.data(), c.data()}));
  for (int64_t k = 0; k < n; ++k) ASSERT_NEAR(c[k], k < n - kLanes ? std::tanh(x[k + kPad]) : x[k] * 2, 1e-6) << k;
  LoweredFunc guard{"guard", {X, C}, loop(jo, vectors, store(C, select(jo < vectors - 1, ahead, f32(0)), j))};
  ir = build_llvm({guard}, Target::parse("llvm"))->source("ll");
  EXPECT_NE(ir.find("@llvm.masked.load.v16f32"), std::string::npos) << ir;
}

TEST(LazySelect, PaddedRowsOnEveryX86Target) {
  // A convolution's padded input as lowering leaves it: each row of w positions is
  // select(row is inside && 1 <= j < w - 1, X[row, j - 1], 0), one vector of w lanes whose mask
  // is known only at run time. LLVM 14's AVX2 code for w = 9 loaded the last lane whatever the
  // mask said, so the padding held the next row's first input (ResNet-18 8% off on haswell).
  FencedArray<float> x;
  fill(x);
  for (const char* target : {"llvm", "llvm -mcpu=haswell", "llvm -mcpu=x86-64-v3", "llvm -mcpu=x86-64-v2"}) {
    for (int64_t w : {5, 8, 9, 16, 25}) {
      const int64_t rows = x.size() / (w - 2), m = rows * w;
      Buffer X = make_buffer("X", kFloat32, {x.size()}), P = make_buffer("P", kFloat32, {m});
      Var r("r");
      Expr j = ramp(Expr(-1), w);  // the input column each lane reads
      Expr inside = logical_and(Broadcast::make(Expr(r) % 3 != 1, w), logical_and(j >= 0, j < w - 2));
      Stmt body = store(P, select(inside, load(X, ramp(r * (w - 2) - 1, w)), f32(0)), ramp(r * w, w));
      Output p(m);
      ASSERT_NO_FATAL_FAILURE(run_fenced({"rows", {X, P}, loop(r, rows, body)}, {x.data(), p.data()}, target));
      for (int64_t k = 0; k < m; ++k) {
        const int64_t row = k / w, col = k % w - 1;
        const bool in = row % 3 != 1 && col >= 0 && col < w - 2;
        ASSERT_EQ(p[k], in ? x[row * (w - 2) + col] : 0.0f) << target << ", width " << w << ", element " << k;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::targets::testing
