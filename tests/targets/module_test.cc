// The compiled module as callers see it: kernel lookup and signatures, argument checks, IR and
// assembly for inspection, object files, IR dumps, and targets that cannot run here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "kernel_builder.h"
#include "runtime/error.h"
#include "targets/build.h"

namespace tessera::targets::testing {
namespace {

using runtime::kFloat32;

// C[ramp(16 io)] = A[ramp(16 io)] * 2 for io in [0, 4): explicit 16-lane vectors.
LoweredFunc scale_kernel(const std::string& name = "scale") {
  Buffer A = make_buffer("A", kFloat32, {4, 16}), C = make_buffer("C", kFloat32, {4, 16});
  Var io("io");
  Expr lanes = ramp(io * 16, 16);
  return {name, {A, C}, loop(io, 4, store(C, load(A, lanes) * Broadcast::make(f32(2), 16), lanes))};
}

LoweredFunc negate_kernel() {
  Buffer X = make_buffer("X", runtime::kInt32, {3}), Y = make_buffer("Y", runtime::kInt32, {3});
  Var i("i");
  return {"negate", {X, Y}, loop(i, 3, store(Y, -load(X, i), i))};
}

bool host_has(const std::string& feature) {
  const auto& mattr = Target::host().mattr;
  return std::find(mattr.begin(), mattr.end(), "+" + feature) != mattr.end();
}

template <typename F>
void expect_error(F&& f, const std::string& part) {
  try {
    f();
    FAIL() << "expected an error containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Module, KernelsAndSignatures) {
  auto module = build({scale_kernel(), negate_kernel()}, Target::parse("llvm"));
  EXPECT_EQ(module->kernel_names(), (std::vector<std::string>{"scale", "negate"}));
  runtime::Kernel negate = module->get_kernel("negate");
  ASSERT_EQ(negate.signature().args.size(), 2u);
  EXPECT_EQ(negate.signature().args[1].name, "Y");
  EXPECT_EQ(runtime::symbolic_shape_str(negate.signature().args[1].shape), "(3,)");
  EXPECT_EQ(negate.signature().args[1].dtype, runtime::kInt32);
  expect_error([&] { module->get_kernel("missing"); }, "module has no kernel 'missing' (it has: scale, negate)");
}

TEST(Module, EmptyModule) {
  auto module = build_llvm({}, Target::parse("llvm"));
  EXPECT_TRUE(module->kernel_names().empty());
  expect_error([&] { module->get_kernel("main"); }, "module has no kernel 'main' (it has: none)");
}

TEST(Module, KernelsOutliveTheirModule) {
  runtime::Kernel negate = build_llvm({negate_kernel()}, Target::parse("llvm"))->get_kernel("negate");
  auto x = array<int32_t>({3}, runtime::kInt32, {1, -2, 3}), y = NDArray::empty({3}, runtime::kInt32);
  negate({x, y});
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{-1, 2, -3}));
}

TEST(Module, ArgumentChecksNameTheArgument) {
  runtime::Kernel k = compile(scale_kernel());
  auto good = NDArray::empty({4, 16}, kFloat32);
  expect_error([&] { k({good}); }, "takes 2 arguments, got 1");
  expect_error(
      [&] {
        k({good, NDArray::empty({4, 15}, kFloat32)});
      },
      "argument 1 ('C'): expected shape (4, 16), got (4, 15)");
  expect_error(
      [&] {
        k({NDArray::empty({4, 16}, runtime::kInt32), good});
      },
      "argument 0 ('A'): expected dtype float32, got int32");
  // The exported function checks the count itself too: callers may skip Kernel's checks.
  void* data[2] = {good.data(), good.data()};
  EXPECT_EQ(k.function()(data, 1), kStatusBadArgumentCount);
  EXPECT_EQ(k.function()(data, 2), 0);
}

TEST(Module, SourcesShowVectorIrAndZmmAssembly) {
  auto module = build_llvm({scale_kernel()}, Target::parse("llvm"));
  const std::string ir = module->source("ll");
  EXPECT_NE(ir.find("<16 x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("define i32 @scale(i8** "), std::string::npos) << ir;
  EXPECT_NE(ir.find("\"target-cpu\""), std::string::npos);
  const std::string assembly = module->source("asm");
  // The widest registers the host has: 512-bit, 256-bit (AVX2) or 128-bit.
  const char* widest = host_has("avx512f") ? "zmm" : host_has("avx2") ? "ymm" : "xmm";
  EXPECT_NE(assembly.find(widest), std::string::npos) << assembly;
  EXPECT_EQ(module->source("asm"), assembly);
  expect_error([&] { module->source("ptx"); }, "no source in format 'ptx' (available: ll, asm)");
}

TEST(Module, FastMathKeepsNanAndInfinity) {
  Buffer A = make_buffer("A", kFloat32, {16}), C = make_buffer("C", kFloat32, {16});
  Var i("i");
  std::string ir =
      build_llvm({{"fm", {A, C}, loop(i, 16, store(C, load(A, i) * 3 + 1, i))}}, Target::parse("llvm"))->source("ll");
  EXPECT_NE(ir.find("reassoc"), std::string::npos) << ir;
  EXPECT_NE(ir.find("contract"), std::string::npos);
  EXPECT_EQ(ir.find("nnan"), std::string::npos);
  EXPECT_EQ(ir.find("ninf"), std::string::npos);
  EXPECT_EQ(ir.find(" fast "), std::string::npos);
}

void expect_elf_object(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4),
            "\x7f"
            "ELF")
      << path;
  EXPECT_GT(std::filesystem::file_size(path), 64u);
}

TEST(Module, EmitsElfObjectsForTheHostAndOtherCpus) {
  const std::string dir = ::testing::TempDir();
  emit_object_file({scale_kernel(), negate_kernel()}, Target::parse("llvm"), dir + "/host.o");
  expect_elf_object(dir + "/host.o");
  emit_object_file({scale_kernel()}, Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3"), dir + "/znver3.o");
  expect_elf_object(dir + "/znver3.o");
  expect_error([&] { emit_object_file({scale_kernel()}, Target::parse("llvm"), dir + "/no/such/dir/x.o"); },
               "no/such/dir/x.o");
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Tuning records are keyed by the spelled-out target, so it must stand for the very code an
// unset CPU gets (16-lane vectors here: AVX-512 on a Zen 4, which LLVM 14 names znver3).
TEST(Module, HostDefaultsCompileAsTheUnsetCpu) {
  const std::string dir = ::testing::TempDir();
  Target spelled = Target::parse("llvm").with_host_defaults();
  emit_object_file({scale_kernel()}, Target::parse("llvm"), dir + "/unset.o");
  emit_object_file({scale_kernel()}, spelled, dir + "/spelled.o");
  EXPECT_EQ(read_bytes(dir + "/unset.o"), read_bytes(dir + "/spelled.o")) << spelled.str();
}

TEST(Module, RefusesToRunCodeTheHostCannot) {
  // Some vector extension this host lacks (avx512fp16 on this project's machines).
  for (const std::string& f : Target::host().mattr) {
    if (f.compare(0, 4, "-avx") != 0) continue;
    expect_error([&] { build_llvm({scale_kernel()}, Target::parse("llvm -mattr=+" + f.substr(1))); },
                 ", which this host");
    break;
  }
  expect_error([] { build_llvm({scale_kernel()}, Target::parse("llvm -mtriple=aarch64-linux-gnu")); }, "aarch64");
  expect_error([] { build_llvm({scale_kernel()}, Target::parse("llvm -mcpu=notacpu")); },
               "does not know the CPU 'notacpu'");
  expect_error([] { build_llvm({scale_kernel()}, Target::parse("llvm -mattr=+notafeature")); },
               "does not know the feature 'notafeature'");
  // The host, spelled out, runs; so does a named CPU whose vector extensions this host has.
  compile(scale_kernel(), Target::host().str());
  if (!host_has("avx2")) return;
  runtime::Kernel k = compile(scale_kernel(), "llvm -mcpu=x86-64-v3");
  auto a = array<float>({4, 16}, kFloat32, std::vector<float>(64, 1.5f)), c = NDArray::empty({4, 16}, kFloat32);
  k({a, c});
  EXPECT_EQ(values<float>(c), std::vector<float>(64, 3.0f));
}

TEST(Module, RejectsBadKernelNames) {
  LoweredFunc bad = negate_kernel();
  bad.name = "2fast";
  expect_error([&] { build_llvm({bad}, Target::parse("llvm")); }, "kernel name '2fast' is not a C identifier");
  bad.name = "expf";
  expect_error([&] { build_llvm({bad}, Target::parse("llvm")); }, "kernel name 'expf' is taken");
  expect_error(
      [&] {
        build_llvm({negate_kernel(), negate_kernel()}, Target::parse("llvm"));
      },
      "two kernels are named 'negate'");
}

TEST(Module, DumpsIrBeforeAndAfterOptimization) {
  const std::string dir = ::testing::TempDir() + "/tessera_dump_ir";
  std::filesystem::remove_all(dir);
  setenv("TESSERA_DUMP_IR", dir.c_str(), 1);
  build_llvm({scale_kernel("dumped")}, Target::parse("llvm"));
  unsetenv("TESSERA_DUMP_IR");
  for (const char* stage : {"before", "after"}) {
    std::ifstream in(dir + "/dumped." + stage + ".ll");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("@dumped"), std::string::npos) << stage;
  }
}

}  // namespace
}  // namespace tessera::targets::testing
