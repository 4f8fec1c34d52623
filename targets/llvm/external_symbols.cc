#include "targets/llvm/external_symbols.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "runtime/thread_pool.h"
#include "runtime/half.h"

// libgcc's helpers for llvm.powi, which LLVM may form from pow(x, small integer).
extern "C" float __powisf2(float, int);
extern "C" double __powidf2(double, int);

namespace tessera::targets::llvm_backend {

namespace {
template <typename F>
void* address(F* f) {
  return reinterpret_cast<void*>(f);
}
}  // namespace

// Besides what the code generator calls itself (lane-by-lane math, aligned_alloc/free), LLVM
// introduces calls on its own: memset/memcpy/memmove for loop idioms, fmod for frem, sincos
// for sin and cos of one value, roundeven and half conversions where an instruction is missing.
const std::vector<ExternalSymbol>& external_symbols() {
#define TESSERA_LIBM1(name)                                   \
  {#name, address(static_cast<double (*)(double)>(&::name))}, \
      {#name "f", address(static_cast<float (*)(float)>(&::name##f))},
#define TESSERA_LIBM2(name)                                           \
  {#name, address(static_cast<double (*)(double, double)>(&::name))}, \
      {#name "f", address(static_cast<float (*)(float, float)>(&::name##f))},
  static const std::vector<ExternalSymbol> table = {
      {"tessera_parallel_launch", address(&tessera_parallel_launch)},
      {"tessera_num_threads", address(&tessera_num_threads)},
      {"aligned_alloc", address(&::aligned_alloc)},
      {"free", address(&::free)},
      {"memset", address(&::memset)},
      {"memcpy", address(&::memcpy)},
      {"memmove", address(&::memmove)},
      {"sincos", address(static_cast<void (*)(double, double*, double*)>(&::sincos))},
      {"sincosf", address(static_cast<void (*)(float, float*, float*)>(&::sincosf))},
      {"__powisf2", address(&__powisf2)},
      {"__powidf2", address(&__powidf2)},
      // LLVM 14 converts between half and float through compiler-rt's helpers on CPUs without
      // F16C; libgcc does not have them under these names.
      {"__gnu_h2f_ieee", address(&runtime::half_to_float)},
      {"__gnu_f2h_ieee", address(&runtime::float_to_half)},
      TESSERA_LIBM1(exp) TESSERA_LIBM1(exp2) TESSERA_LIBM1(expm1) TESSERA_LIBM1(log) TESSERA_LIBM1(log2)
          TESSERA_LIBM1(log10) TESSERA_LIBM1(log1p) TESSERA_LIBM1(sqrt) TESSERA_LIBM1(cbrt) TESSERA_LIBM1(fabs)
              TESSERA_LIBM1(floor) TESSERA_LIBM1(ceil) TESSERA_LIBM1(trunc) TESSERA_LIBM1(round) TESSERA_LIBM1(rint)
                  TESSERA_LIBM1(nearbyint) TESSERA_LIBM1(roundeven) TESSERA_LIBM1(sin) TESSERA_LIBM1(cos)
                      TESSERA_LIBM1(tan) TESSERA_LIBM1(asin) TESSERA_LIBM1(acos) TESSERA_LIBM1(atan) TESSERA_LIBM1(sinh)
                          TESSERA_LIBM1(cosh) TESSERA_LIBM1(tanh) TESSERA_LIBM1(asinh) TESSERA_LIBM1(acosh)
                              TESSERA_LIBM1(atanh) TESSERA_LIBM1(erf) TESSERA_LIBM1(erfc) TESSERA_LIBM2(pow)
                                  TESSERA_LIBM2(fmod) TESSERA_LIBM2(atan2) TESSERA_LIBM2(copysign) TESSERA_LIBM2(fmin)
                                      TESSERA_LIBM2(fmax)};
#undef TESSERA_LIBM1
#undef TESSERA_LIBM2
  return table;
}

bool is_external_symbol(const std::string& name) {
  for (const auto& s : external_symbols())
    if (name == s.name) return true;
  return false;
}

}  // namespace tessera::targets::llvm_backend
