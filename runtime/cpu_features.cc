#include "runtime/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace tessera::runtime {

namespace {

#if defined(__x86_64__)
enum Reg { EAX, EBX, ECX, EDX };
struct CpuidBit {
  const char* name;
  unsigned leaf, subleaf;
  Reg reg;
  int bit;
  uint64_t xcr0;  // register state the OS must save for the extension to be usable
};
constexpr uint64_t kYmm = 0x6, kZmm = 0xE6, kTmm = 0x60000;
constexpr CpuidBit kX86[] = {
    {"cmov", 1, 0, EDX, 15, 0},
    {"sse", 1, 0, EDX, 25, 0},
    {"sse2", 1, 0, EDX, 26, 0},
    {"sse3", 1, 0, ECX, 0, 0},
    {"ssse3", 1, 0, ECX, 9, 0},
    {"fma", 1, 0, ECX, 12, kYmm},
    {"sse4.1", 1, 0, ECX, 19, 0},
    {"sse4.2", 1, 0, ECX, 20, 0},
    {"movbe", 1, 0, ECX, 22, 0},
    {"popcnt", 1, 0, ECX, 23, 0},
    {"avx", 1, 0, ECX, 28, kYmm},
    {"f16c", 1, 0, ECX, 29, kYmm},
    {"bmi", 7, 0, EBX, 3, 0},
    {"avx2", 7, 0, EBX, 5, kYmm},
    {"bmi2", 7, 0, EBX, 8, 0},
    {"avx512f", 7, 0, EBX, 16, kZmm},
    {"avx512dq", 7, 0, EBX, 17, kZmm},
    {"avx512ifma", 7, 0, EBX, 21, kZmm},
    {"avx512pf", 7, 0, EBX, 26, kZmm},
    {"avx512er", 7, 0, EBX, 27, kZmm},
    {"avx512cd", 7, 0, EBX, 28, kZmm},
    {"avx512bw", 7, 0, EBX, 30, kZmm},
    {"avx512vl", 7, 0, EBX, 31, kZmm},
    {"avx512vbmi", 7, 0, ECX, 1, kZmm},
    {"avx512vbmi2", 7, 0, ECX, 6, kZmm},
    {"avx512vnni", 7, 0, ECX, 11, kZmm},
    {"avx512bitalg", 7, 0, ECX, 12, kZmm},
    {"avx512vpopcntdq", 7, 0, ECX, 14, kZmm},
    {"avx512vp2intersect", 7, 0, EDX, 8, kZmm},
    {"amx-bf16", 7, 0, EDX, 22, kTmm},
    {"avx512fp16", 7, 0, EDX, 23, kZmm},
    {"amx-tile", 7, 0, EDX, 24, kTmm},
    {"amx-int8", 7, 0, EDX, 25, kTmm},
    {"avxvnni", 7, 1, EAX, 4, kYmm},
    {"avx512bf16", 7, 1, EAX, 5, kZmm},
    {"lzcnt", 0x80000001, 0, ECX, 5, 0},
    {"sse4a", 0x80000001, 0, ECX, 6, 0},
    {"xop", 0x80000001, 0, ECX, 11, kYmm},
    {"fma4", 0x80000001, 0, ECX, 16, kYmm},
};

uint64_t os_saved_state() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;  // no OSXSAVE: no xgetbv
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool host_has(const CpuidBit& f) {
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(f.leaf, f.subleaf, &r[EAX], &r[EBX], &r[ECX], &r[EDX])) return false;
  if (!(r[f.reg] & (1u << f.bit))) return false;
  static const uint64_t saved = os_saved_state();
  return (saved & f.xcr0) == f.xcr0;
}
#endif

#if defined(__aarch64__)
struct HwcapBit {
  const char* name;
  int word;  // 1: AT_HWCAP, 2: AT_HWCAP2
  unsigned long mask;
};
constexpr HwcapBit kAArch64[] = {
    {"neon", 1, 1ul << 1}, {"fullfp16", 1, (1ul << 9) | (1ul << 10)}, {"sve", 1, 1ul << 22}, {"sve2", 2, 1ul << 1}};

bool host_has(const HwcapBit& f) {
  unsigned long caps = getauxval(f.word == 1 ? AT_HWCAP : AT_HWCAP2);
  return (caps & f.mask) == f.mask;
}
#endif

}  // namespace

std::string host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

const std::vector<std::string>& detectable_cpu_features(const std::string& arch) {
  // Spelled out per architecture (not taken from the tables above, which exist only on their own
  // architecture) so a compiler on one can record features for another.
  static const std::vector<std::string> x86 = {"cmov",
                                               "sse",
                                               "sse2",
                                               "sse3",
                                               "ssse3",
                                               "fma",
                                               "sse4.1",
                                               "sse4.2",
                                               "movbe",
                                               "popcnt",
                                               "avx",
                                               "f16c",
                                               "bmi",
                                               "avx2",
                                               "bmi2",
                                               "avx512f",
                                               "avx512dq",
                                               "avx512ifma",
                                               "avx512pf",
                                               "avx512er",
                                               "avx512cd",
                                               "avx512bw",
                                               "avx512vl",
                                               "avx512vbmi",
                                               "avx512vbmi2",
                                               "avx512vnni",
                                               "avx512bitalg",
                                               "avx512vpopcntdq",
                                               "avx512vp2intersect",
                                               "amx-bf16",
                                               "avx512fp16",
                                               "amx-tile",
                                               "amx-int8",
                                               "avxvnni",
                                               "avx512bf16",
                                               "lzcnt",
                                               "sse4a",
                                               "xop",
                                               "fma4"};
  static const std::vector<std::string> aarch64 = {"neon", "fullfp16", "sve", "sve2"};
  static const std::vector<std::string> none;
  if (arch == "x86_64") return x86;
  if (arch == "aarch64") return aarch64;
  return none;
}

std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required) {
  std::vector<std::string> missing;
  for (const std::string& name : required) {
    bool known = false, present = false;
#if defined(__x86_64__)
    for (const CpuidBit& f : kX86)
      if (name == f.name) known = true, present = host_has(f);
#elif defined(__aarch64__)
    for (const HwcapBit& f : kAArch64)
      if (name == f.name) known = true, present = host_has(f);
#endif
    if (!known) missing.push_back(name + " (unknown to this runtime)");
    else if (!present) missing.push_back(name + " (not supported by this CPU)");
  }
  return missing;
}

}  // namespace tessera::runtime
