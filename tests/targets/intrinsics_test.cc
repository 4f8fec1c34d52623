// Every intrinsic against libm (evaluated in double on the same inputs), as a scalar loop and as
// 16-lane vector code, including infinities, NaN and inputs that overflow or underflow.
#include <gtest/gtest.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <limits>

#include "kernel_builder.h"
#include "runtime/cpu_features.h"

namespace tessera::targets::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T>
struct Outputs {
  std::vector<T> scalar, vector;
  std::string ir;
};

// out_s[i] = op(in[0][i], ...) in a scalar loop; out_v[16 io : 16 io + 16] = the same, vectorized.
// Inputs are padded to a multiple of 16 with copies of their first elements.
template <typename In, typename Out>
Outputs<Out> run(Intrinsic op, DataType in_type, DataType out_type, std::vector<std::vector<In>> inputs,
                 const std::string& target = "llvm") {
  for (auto& in : inputs) {
    const size_t given = in.size();
    for (size_t k = 0; in.size() % 16; ++k) {
      In first = in[k % given];  // a copy: push_back may move the vector
      in.push_back(first);
    }
  }
  const auto n = static_cast<int64_t>(inputs[0].size());
  std::vector<Buffer> args;
  std::vector<NDArray> arrays;
  for (size_t k = 0; k < inputs.size(); ++k) {
    args.push_back(make_buffer("x" + std::to_string(k), in_type, {n}));
    arrays.push_back(array<In>({n}, in_type, inputs[k]));
  }
  Buffer ys = make_buffer("ys", out_type, {n}), yv = make_buffer("yv", out_type, {n});
  Var i("i"), io("io");
  std::vector<Expr> scalar_args, vector_args;
  for (const Buffer& x : args) {
    scalar_args.push_back(load(x, i));
    vector_args.push_back(load(x, ramp(io * 16, 16)));
  }
  Stmt body = Block::make({loop(i, n, store(ys, call(op, scalar_args), i)),
                           loop(io, n / 16, store(yv, call(op, vector_args), ramp(io * 16, 16)))});
  args.push_back(ys);
  args.push_back(yv);
  arrays.push_back(NDArray::empty({n}, out_type));
  arrays.push_back(NDArray::empty({n}, out_type));
  auto module = build_llvm({{"intrinsic", args, body}}, Target::parse(target));
  module->get_kernel("intrinsic")(arrays);
  return {values<Out>(arrays[arrays.size() - 2]), values<Out>(arrays.back()), module->source("ll")};
}

std::vector<float> grid(double lo, double hi, int count, const std::vector<double>& specials) {
  std::vector<float> v;
  for (int k = 0; k < count; ++k) v.push_back(static_cast<float>(lo + (hi - lo) * k / (count - 1)));
  for (double s : specials) v.push_back(static_cast<float>(s));
  return v;
}

// Relative error within `tol`; results that are not normal floats must match to a few denormal
// steps; infinities and NaN exactly.
::testing::AssertionResult close(const char* what, double x, double got, double ref, double tol, bool single) {
  double ref_rounded = single ? static_cast<double>(static_cast<float>(ref)) : ref;
  bool ok;
  if (std::isnan(ref)) ok = std::isnan(got);
  else if (std::isinf(ref_rounded)) ok = got == ref_rounded;
  else if (std::fabs(ref) < (single ? FLT_MIN : DBL_MIN)) ok = std::fabs(got - ref) <= (single ? 1e-43 : 1e-305);
  else ok = std::fabs(got - ref) <= tol * std::fabs(ref);
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << "(" << x << ") = " << got << ", expected " << ref << " (rel. error "
                                       << std::fabs(got - ref) / std::fabs(ref) << ")";
}

struct UnaryCase {
  Intrinsic op;
  double (*ref)(double);
  double lo, hi;
  std::vector<double> specials;
  double tol;
};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double rsqrt_ref(double x) { return 1 / std::sqrt(x); }

// exp, log, tanh, sigmoid and erf are polynomial approximations in float32 (2e-6 promised); the
// others come from LLVM intrinsics and libm and are as good as libm's float functions.
const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {Intrinsic::exp,
       [](double x) { return std::exp(x); },
       -87,
       88.5,
       {kInf, -kInf, kNaN, 88.72, 88.8, -87.5, -100, -103.9, -104, -200, 100, 1000, -0.0, 1e-10},
       2e-6},
      {Intrinsic::log,
       [](double x) { return std::log(x); },
       1e-3,
       1e3,
       {0.0, -0.0, -1, kInf, -kInf, kNaN, 1e-40, 1.4e-45, 1.17549435e-38, FLT_MAX, 1, 0.70710677, 0.70710683, 1e-30,
        1e30},
       2e-6},
      {Intrinsic::tanh,
       [](double x) { return std::tanh(x); },
       -10,
       10,
       {kInf, -kInf, kNaN, 20, -20, 1e-20, -1e-20, 0.625, 0.62500006, -0.625, 9, 1e-5, 0.0},
       2e-6},
      {Intrinsic::sigmoid, sigmoid_ref, -87, 30, {kInf, -kInf, kNaN, 100, -100, 88, -88, 0.0, 17, -17}, 2e-6},
      {Intrinsic::erf,
       [](double x) { return std::erf(x); },
       -5,
       5,
       {kInf, -kInf, kNaN, 0.7, 0.69999999, -0.7, 4, 10, -10, 1e-20, -1e-30, 0.0, 3.9, 1e-3},
       2e-6},
      {Intrinsic::sqrt, [](double x) { return std::sqrt(x); }, 0, 1e6, {kInf, kNaN, 1e-40, -1}, 1e-7},
      {Intrinsic::rsqrt, rsqrt_ref, 1e-3, 1e6, {1e-30, 1e30, kNaN, -1, 0.0, kInf, 1e-40}, 2e-6},
      {Intrinsic::abs, [](double x) { return std::fabs(x); }, -100, 100, {-0.0, kInf, -kInf, kNaN}, 0},
      {Intrinsic::floor,
       [](double x) { return std::floor(x); },
       -10.5,
       10.5,
       {-2.5, -0.5, 0.5, 1e20, -1e20, kInf, kNaN},
       0},
      {Intrinsic::ceil, [](double x) { return std::ceil(x); }, -10.5, 10.5, {-2.5, -0.5, 0.5, 1e20, -kInf, kNaN}, 0},
      {Intrinsic::trunc, [](double x) { return std::trunc(x); }, -10.5, 10.5, {-2.5, -0.5, 0.5, 1e20, kInf, kNaN}, 0},
      {Intrinsic::round,
       [](double x) { return std::nearbyint(x); },
       -10.5,
       10.5,
       {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 1e20, kInf, kNaN},
       0},
      {Intrinsic::sin, [](double x) { return std::sin(x); }, -10, 10, {kInf, kNaN, 3.14159274, 1e5}, 2e-6},
      {Intrinsic::cos, [](double x) { return std::cos(x); }, -10, 10, {kInf, kNaN, 1.57079637, 1e5}, 2e-6},
      {Intrinsic::tan, [](double x) { return std::tan(x); }, -1.5, 1.5, {kNaN, 1.57}, 2e-6},
      {Intrinsic::asin, [](double x) { return std::asin(x); }, -1, 1, {1.5, kNaN}, 2e-6},
      {Intrinsic::acos, [](double x) { return std::acos(x); }, -1, 1, {1.5, kNaN}, 2e-6},
      {Intrinsic::atan, [](double x) { return std::atan(x); }, -100, 100, {kInf, -kInf, kNaN}, 2e-6},
      {Intrinsic::sinh, [](double x) { return std::sinh(x); }, -10, 10, {100, -100, kNaN}, 2e-6},
      {Intrinsic::cosh, [](double x) { return std::cosh(x); }, -10, 10, {100, kNaN}, 2e-6},
      {Intrinsic::asinh, [](double x) { return std::asinh(x); }, -100, 100, {kInf, kNaN}, 2e-6},
      {Intrinsic::acosh, [](double x) { return std::acosh(x); }, 1, 100, {0.5, kInf, kNaN}, 2e-6},
      {Intrinsic::atanh, [](double x) { return std::atanh(x); }, -0.99, 0.99, {1, -1, 2, kNaN}, 2e-6},
  };
  return cases;
}

void check_float32_against_libm(const std::string& target) {
  for (const UnaryCase& c : unary_cases()) {
    const char* name = intrinsic_name(c.op);
    std::vector<float> x = grid(c.lo, c.hi, 4001, c.specials);
    auto out = run<float, float>(c.op, runtime::kFloat32, runtime::kFloat32, {x}, target);
    int failures = 0;
    for (size_t k = 0; k < x.size() && failures < 5; ++k) {
      double xin = x[k], ref = c.ref(xin);
      auto s = close(name, xin, out.scalar[k], ref, c.tol, true);
      auto v = close(name, xin, out.vector[k], ref, c.tol, true);
      EXPECT_TRUE(s) << "(scalar)";
      EXPECT_TRUE(v) << "(vector)";
      failures += !s + !v;
    }
  }
}

TEST(Intrinsics, Float32MatchesLibm) { check_float32_against_libm("llvm"); }

// SSE2 only: rounding and half conversions become library calls the JIT must resolve.
TEST(Intrinsics, Float32MatchesLibmOnBaselineX86) { check_float32_against_libm("llvm -mcpu=x86-64"); }

// A vector body and its scalar tail give the same erf, exactly 1 from |x| = 4 (as erf(4) rounds).
TEST(Intrinsics, Float32ErfVectorAndScalarAgree) {
  for (const std::string target : {"llvm", "llvm -mcpu=x86-64-v3", "llvm -mcpu=x86-64"}) {
    std::vector<float> x = grid(-6, 6, 4001, {kInf, -kInf, 4, -4, 4.01, 1e30});
    auto out = run<float, float>(Intrinsic::erf, runtime::kFloat32, runtime::kFloat32, {x}, target);
    for (size_t k = 0; k < x.size(); ++k) {
      EXPECT_EQ(out.scalar[k], out.vector[k]) << target << " erf(" << x[k] << ")";
      if (std::fabs(x[k]) >= 4) EXPECT_EQ(std::fabs(out.vector[k]), 1.0f) << target << " erf(" << x[k] << ")";
    }
  }
}

// exp's 2^n by AVX-512's vscalefps on 16 lanes and by two factors built from exponent bits
// elsewhere (scalar tails, AVX2) round alike: the same floats, overflow and denormals included.
TEST(Intrinsics, Float32ExpScalesByAPowerOfTwoAlikeEverywhere) {
  std::vector<float> x = grid(-106, 90, 8001, {kInf, -kInf, kNaN, 88.72, -87.34, -103.97, -0.0});
  for (Intrinsic op : {Intrinsic::exp, Intrinsic::sigmoid, Intrinsic::tanh}) {
    auto wide = run<float, float>(op, runtime::kFloat32, runtime::kFloat32, {x}, "llvm");
    auto avx2 = run<float, float>(op, runtime::kFloat32, runtime::kFloat32, {x}, "llvm -mcpu=x86-64-v3");
    if (runtime::missing_cpu_features({"avx512f"}).empty())
      EXPECT_NE(wide.ir.find("scalef"), std::string::npos) << intrinsic_name(op);
    EXPECT_EQ(avx2.ir.find("scalef"), std::string::npos) << intrinsic_name(op);
    for (size_t k = 0; k < x.size(); ++k) {
      for (float got : {wide.scalar[k], avx2.vector[k], avx2.scalar[k]}) {
        if (std::isnan(got)) EXPECT_TRUE(std::isnan(wide.vector[k])) << intrinsic_name(op) << "(" << x[k] << ")";
        else EXPECT_EQ(got, wide.vector[k]) << intrinsic_name(op) << "(" << x[k] << ")";
      }
    }
  }
}

TEST(Intrinsics, Float32ApproximationsVectorize) {
  for (Intrinsic op : {Intrinsic::exp, Intrinsic::log, Intrinsic::tanh, Intrinsic::sigmoid, Intrinsic::erf}) {
    auto out = run<float, float>(op, runtime::kFloat32, runtime::kFloat32, {grid(0.5, 2, 32, {})});
    EXPECT_NE(out.ir.find("<16 x float>"), std::string::npos) << intrinsic_name(op);
    EXPECT_EQ(out.ir.find("call float @"), std::string::npos) << intrinsic_name(op) << " calls libm:\n" << out.ir;
  }
}

TEST(Intrinsics, Float64MatchesLibm) {
  const std::vector<std::pair<Intrinsic, double (*)(double)>> cases = {
      {Intrinsic::exp, [](double x) { return std::exp(x); }},
      {Intrinsic::log, [](double x) { return std::log(x); }},
      {Intrinsic::tanh, [](double x) { return std::tanh(x); }},
      {Intrinsic::erf, [](double x) { return std::erf(x); }},
      {Intrinsic::sigmoid, sigmoid_ref},
      {Intrinsic::atan, [](double x) { return std::atan(x); }}};
  std::vector<double> x;
  for (int k = 0; k < 64; ++k) x.push_back(0.01 + 0.37 * k);
  x.insert(x.end(), {kInf, kNaN, 800.0});
  for (const auto& [op, ref] : cases) {
    auto out = run<double, double>(op, runtime::kFloat64, runtime::kFloat64, {x});
    for (size_t k = 0; k < x.size(); ++k) {
      EXPECT_TRUE(close(intrinsic_name(op), x[k], out.scalar[k], ref(x[k]), 1e-14, false)) << "(scalar)";
      EXPECT_TRUE(close(intrinsic_name(op), x[k], out.vector[k], ref(x[k]), 1e-14, false)) << "(vector)";
    }
  }
}

TEST(Intrinsics, Pow) {
  std::vector<float> base, exponent;
  for (int k = 0; k < 64; ++k) {
    base.push_back(0.1f + 0.15f * k);
    exponent.push_back(-3.0f + 0.1f * k);
  }
  base.insert(base.end(), {0.0f, -2.0f, 2.0f, -2.0f});
  exponent.insert(exponent.end(), {2.0f, 3.0f, 0.5f, 0.5f});
  auto out = run<float, float>(Intrinsic::pow, runtime::kFloat32, runtime::kFloat32, {base, exponent});
  for (size_t k = 0; k < base.size(); ++k) {
    double ref = std::pow(double(base[k]), double(exponent[k]));
    EXPECT_TRUE(close("pow", base[k], out.scalar[k], ref, 2e-6, true)) << "^" << exponent[k];
    EXPECT_TRUE(close("pow", base[k], out.vector[k], ref, 2e-6, true)) << "^" << exponent[k];
  }
}

TEST(Intrinsics, IsNanAndIsInfSurviveFastMath) {
  std::vector<float> x = {0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, FLT_MIN, 1e-45f};
  auto nan = run<float, uint8_t>(Intrinsic::isnan, runtime::kFloat32, runtime::kBool, {x});
  auto inf = run<float, uint8_t>(Intrinsic::isinf, runtime::kFloat32, runtime::kBool, {x});
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(nan.scalar[k], std::isnan(x[k]) ? 1 : 0) << x[k];
    EXPECT_EQ(nan.vector[k], std::isnan(x[k]) ? 1 : 0) << x[k];
    EXPECT_EQ(inf.scalar[k], std::isinf(x[k]) ? 1 : 0) << x[k];
    EXPECT_EQ(inf.vector[k], std::isinf(x[k]) ? 1 : 0) << x[k];
  }
}

TEST(Intrinsics, IntegerAbsAndBitOperations) {
  const DataType i32 = runtime::kInt32, u8 = DataType::UInt(8);
  std::vector<int32_t> a = {0, 1, -1, 5, -6, INT_MAX, INT_MIN, 0x0f0f0f0f, -12345, 77};
  std::vector<int32_t> b = {0, 1, 2, 3, 4, 31, 1, 4, 7, 0};
  auto check = [&](Intrinsic op, auto ref) {
    auto out = run<int32_t, int32_t>(
        op, i32, i32,
        intrinsic_arity(op) == 1 ? std::vector<std::vector<int32_t>>{a} : std::vector<std::vector<int32_t>>{a, b});
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(out.scalar[k], ref(a[k], b[k])) << intrinsic_name(op) << "(" << a[k] << ", " << b[k] << ")";
      EXPECT_EQ(out.vector[k], ref(a[k], b[k])) << intrinsic_name(op) << "(" << a[k] << ", " << b[k] << ")";
    }
  };
  check(Intrinsic::abs, [](int32_t x, int32_t) { return x == INT_MIN ? INT_MIN : std::abs(x); });
  check(Intrinsic::bitwise_and, [](int32_t x, int32_t y) { return x & y; });
  check(Intrinsic::bitwise_or, [](int32_t x, int32_t y) { return x | y; });
  check(Intrinsic::bitwise_xor, [](int32_t x, int32_t y) { return x ^ y; });
  check(Intrinsic::bitwise_not, [](int32_t x, int32_t) { return ~x; });
  check(Intrinsic::shift_left,
        [](int32_t x, int32_t y) { return static_cast<int32_t>(static_cast<uint32_t>(x) << y); });
  check(Intrinsic::shift_right, [](int32_t x, int32_t y) { return x >> y; });  // arithmetic

  std::vector<uint8_t> ua = {0, 1, 128, 255, 200}, ub = {0, 1, 7, 4, 3};
  auto shr = run<uint8_t, uint8_t>(Intrinsic::shift_right, u8, u8, {ua, ub});
  auto abs = run<uint8_t, uint8_t>(Intrinsic::abs, u8, u8, {ua});
  for (size_t k = 0; k < ua.size(); ++k) {
    EXPECT_EQ(shr.scalar[k], ua[k] >> ub[k]);  // logical
    EXPECT_EQ(shr.vector[k], ua[k] >> ub[k]);
    EXPECT_EQ(abs.scalar[k], ua[k]);
  }

  std::vector<uint8_t> p = {0, 0, 1, 1}, q = {0, 1, 0, 1};
  auto x = run<uint8_t, uint8_t>(Intrinsic::bitwise_xor, runtime::kBool, runtime::kBool, {p, q});
  auto n = run<uint8_t, uint8_t>(Intrinsic::bitwise_not, runtime::kBool, runtime::kBool, {p});
  for (size_t k = 0; k < p.size(); ++k) {
    EXPECT_EQ(x.vector[k], p[k] ^ q[k]);
    EXPECT_EQ(n.scalar[k], !p[k]);
    EXPECT_EQ(n.vector[k], !p[k]);
  }
}

}  // namespace
}  // namespace tessera::targets::testing
