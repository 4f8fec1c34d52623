// Graphs as deep as real models (thousands of nodes in a chain) print, parse, compare and hash
// without recursing on their depth: the work runs on a thread with a small stack, where
// recursion per node would overflow it.
#include <gtest/gtest.h>
#include <pthread.h>

#include <exception>
#include <functional>

#include "relay_ir/parser.h"
#include "relay_ir/printer.h"
#include "relay_ir/structural.h"
#include "relay_ir/transforms/infer_type.h"
#include "graphs.h"

namespace tessera::relay_ir {
namespace {

using runtime::kFloat32;
using testing::constant_of;
using testing::f32;

// Runs f on a thread with a `bytes`-sized stack and rethrows what it throws.
void run_with_stack(size_t bytes, const std::function<void()>& f) {
  struct Job {
    const std::function<void()>* f;
    std::exception_ptr error;
  } job{&f, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t thread;
  auto body = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    try {
      (*j->f)();
    } catch (...) {
      j->error = std::current_exception();
    }
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, &job), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  if (job.error) std::rethrow_exception(job.error);
}

TEST(RelayDeepGraph, TwentyThousandNodeChain) {
  constexpr int kDepth = 20000;
  Var x("x", f32({4}));
  Expr bias = constant_of<float>(kFloat32, {4}, {1, 2, 3, 4});  // shared by every add
  Expr e = x;
  for (int i = 0; i < kDepth; ++i) e = i % 2 ? call("relu", {e}) : call("add", {e, bias});
  Module m(function({x}, e));
  Expr copy = x;
  for (int i = 0; i < kDepth; ++i) copy = i % 2 ? call("relu", {copy}) : call("add", {copy, bias});
  infer_type(m);

  // Built here and dropped here: releasing a chain is the nodes' business, not these functions'.
  Module parsed;
  run_with_stack(1 << 20, [&] {
    std::string text = to_text(m);
    EXPECT_NE(text.find("  %0 = constant(float32[4], [1, 2, 3, 4]);\n  %1 = add(%x, %0);\n  %2 = relu(%1);\n"),
              std::string::npos);
    EXPECT_NE(text.find("  relu(%19999)\n}\n"), std::string::npos);
    parsed = parse_module(text);
    EXPECT_EQ(to_text(parsed), text);
    EXPECT_TRUE(structural_equal(parsed, m));
    EXPECT_TRUE(structural_equal(m.main()->body, copy));
    EXPECT_EQ(structural_hash(parsed), structural_hash(m));
    EXPECT_EQ(structural_hash(m.main()->body), structural_hash(copy));
    EXPECT_FALSE(structural_equal(m.main()->body, call("relu", {copy})));
  });
}

}  // namespace
}  // namespace tessera::relay_ir

namespace tessera::relay_ir {
namespace {

TEST(RelayDeepGraph, DroppingAMillionNodeChainDoesNotRecurse) {
  // Built and released on a thread with a 256 KiB stack: deleting node by node recursively
  // would need hundreds of megabytes.
  run_with_stack(1 << 18, [] {
    Var x("x", f32({1}));
    Expr e = x;
    for (int i = 0; i < 1000000; ++i) e = call("relu", {e});
    e = Expr();
  });
}

}  // namespace
}  // namespace tessera::relay_ir
