// The link from each registered op to its default schedule: the op's schedule tag (OpDef,
// declared at registration in relay_ir/ops/) names a CPU template in schedule/templates/, and the
// compute of a call of the op gives its output stage that tag. The test lives here because only
// the layers above relay_ir and schedule see both.
#include <gtest/gtest.h>

#include <exception>
#include <map>
#include <set>
#include <string>

#include "relay_ir/compute_of_call.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/infer_type.h"
#include "schedule/templates/cpu.h"
#include "targets/target.h"

namespace tessera::driver {
namespace {

using namespace relay_ir;

// Tags without a template of their own, whose stages take the generic schedule on purpose: the
// weight packings (constant-folded in practice) and grid_sample (data-dependent gathers).
const std::set<std::string> kGenericByChoice = {"conv_pack", "matmul_pack", "grid_sample"};

bool has_schedule(const std::string& tag) {
  return schedule::cpu_templates().count(tag) || kGenericByChoice.count(tag);
}

struct ArgType {
  std::vector<int64_t> shape;
  DataType dtype;
};
struct Sample {
  std::vector<ArgType> args;
  Attrs attrs;
};

// Calls of the ops the automatic samples below do not type (their arguments' shapes or dtypes
// depend on one another).
std::map<std::string, Sample> explicit_samples() {
  const DataType f = runtime::kFloat32, i64 = runtime::kInt64, u8 = DataType::UInt(8), i8 = DataType::Int(8);
  const DataType u32 = DataType::UInt(32);
  using Ints = std::vector<int64_t>;
  const Attrs registers{{"vector_bytes", int64_t(64)}, {"vector_registers", int64_t(32)}};
  return {
      {"arange", {{{{}, i64}, {{}, i64}}, {{"shape", Ints{5}}}}},
      {"batch_norm", {{{{2, 3, 4, 4}, f}, {{3}, f}, {{3}, f}, {{3}, f}, {{3}, f}}, {}}},
      {"batch_norm_train", {{{{2, 3, 4, 4}, f}, {{3}, f}, {{3}, f}, {{3}, f}, {{3}, f}}, {}}},
      {"instance_norm", {{{{2, 3, 4, 4}, f}, {{3}, f}, {{3}, f}}, {}}},
      {"broadcast_to", {{{{3, 1}, f}}, {{"shape", Ints{2, 3, 4}}}}},
      {"shape_values", {{}, {{"dims", Ints{2, 7}}}}},
      {"conv_integer", {{{{1, 2, 5, 5}, u8}, {{2, 2, 3, 3}, u8}, {{}, u8}, {{}, u8}}, {}}},
      {"conv_transpose", {{{{1, 2, 4, 4}, f}, {{2, 3, 3, 3}, f}}, {}}},
      {"conv_weight_grad", {{{{1, 2, 5, 5}, f}, {{1, 3, 3, 3}, f}}, {{"kernel", Ints{3, 3}}}}},
      {"conv_winograd_weight", {{{{8, 2, 3, 3}, f}}, registers}},
      {"depth_to_space", {{{{1, 8, 2, 2}, f}}, {{"blocksize", int64_t(2)}}}},
      {"dequantize_linear", {{{{2, 3}, i8}, {{}, f}, {{}, i8}}, {}}},
      {"quantize_linear", {{{{2, 3}, f}, {{}, f}, {{}, i8}}, {}}},
      {"einsum", {{{{2, 3}, f}, {{3, 4}, f}}, {{"equation", std::string("ij,jk->ik")}}}},
      {"gemm", {{{{2, 3}, f}, {{3, 4}, f}}, {}}},
      {"grid_sample", {{{{1, 2, 4, 4}, f}, {{1, 3, 3, 2}, f}}, {}}},
      {"left_shift", {{{{2, 3}, u32}, {{2, 3}, u32}}, {}}},
      {"right_shift", {{{{2, 3}, u32}, {{2, 3}, u32}}, {}}},
      {"matmul_integer", {{{{2, 3}, u8}, {{3, 4}, u8}, {{}, u8}, {{}, u8}}, {}}},
      {"matmul_pack_weight", {{{{3, 8}, f}}, registers}},
      {"max_pool_grad",
       {{{{1, 2, 4, 4}, f}, {{1, 2, 2, 2}, f}, {{1, 2, 2, 2}, f}}, {{"kernel", Ints{2, 2}}, {"strides", Ints{2, 2}}}}},
      {"nll_loss", {{{{2, 3}, f}, {{2}, i64}}, {}}},
      {"one_hot", {{{{2, 3}, i64}, {{2}, f}}, {{"depth", int64_t(3)}}}},
      {"qlinear_conv",
       {{{{1, 2, 5, 5}, u8}, {{}, f}, {{}, u8}, {{2, 2, 3, 3}, u8}, {{}, f}, {{}, u8}, {{}, f}, {{}, u8}}, {}}},
      {"qlinear_matmul", {{{{2, 3}, u8}, {{}, f}, {{}, u8}, {{3, 4}, u8}, {{}, f}, {{}, u8}, {{}, f}, {{}, u8}}, {}}},
      {"resize", {{{{1, 1, 2, 2}, f}}, {{"sizes", Ints{1, 1, 4, 4}}}}},
      {"reverse_sequence", {{{{4, 2, 3}, f}, {{2}, i64}}, {}}},
      {"roi_align", {{{{1, 2, 8, 8}, f}, {{3, 4}, f}, {{3}, i64}}, {}}},
      {"deform_conv", {{{{1, 2, 5, 5}, f}, {{3, 2, 3, 3}, f}, {{1, 18, 3, 3}, f}, {{3}, f}, {{1, 9, 3, 3}, f}}, {}}},
      {"scatter_nd", {{{{4, 3}, f}, {{2, 1}, i64}, {{2, 3}, f}}, {}}},
      {"unslice",
       {{{{1, 3, 4, 4}, f}}, {{"shape", Ints{2, 3, 4, 4}}, {"starts", Ints{0}}, {"ends", Ints{1}}, {"axes", Ints{0}}}}},
      {"weighted_gather", {{{{2, 3}, f}, {{4, 2}, i64}, {{4, 2}, f}}, {}}},
  };
}

// Values for required attributes, by name, fitting arguments of shape [2, 3, 4, 4].
Attrs required_attrs(const OpDef& def) {
  using Ints = std::vector<int64_t>;
  static const std::map<std::string, AttrValue> values = {{"shape", Ints{2, 3, 16}},
                                                          {"axes", Ints{0}},
                                                          {"sizes", Ints{1, 1}},
                                                          {"kernel", Ints{2, 2}},
                                                          {"starts", Ints{0}},
                                                          {"ends", Ints{1}},
                                                          {"pads", Ints{0, 0, 1, 1, 0, 0, 1, 1}},
                                                          {"repeats", Ints{1, 1, 1, 2}},
                                                          {"blocksize", int64_t(2)},
                                                          {"depth", int64_t(3)},
                                                          {"k", int64_t(2)},
                                                          {"size", int64_t(3)},
                                                          {"block", int64_t(4)},
                                                          {"input_shape", Ints{2, 3, 5, 5}}};
  Attrs attrs;
  for (const auto& spec : def.attrs) {
    auto it = values.find(spec.name);
    if (spec.required && it != values.end()) attrs.set(spec.name, it->second);
  }
  return attrs;
}

// A typed call of `def`: its explicit sample, else the first of a few argument lists of shape
// [2, 3, 4, 4] (all float32; indices or a condition first or after; all int64; all bool) that
// its type relation accepts. Undefined when none does.
Expr sample_call(const OpDef& def, const std::map<std::string, Sample>& samples) {
  auto typed = [&](const std::vector<ArgType>& types, const Attrs& attrs) -> Expr {
    std::vector<Expr> args;
    for (size_t i = 0; i < types.size(); ++i)
      args.push_back(Var("p" + std::to_string(i), tensor_type(types[i].shape, types[i].dtype)));
    Expr c = call(def.name, args, attrs);
    infer_type(c);
    return c;
  };
  if (auto it = samples.find(def.name); it != samples.end()) return typed(it->second.args, it->second.attrs);
  const std::vector<int64_t> shape{2, 3, 4, 4};
  const DataType f = runtime::kFloat32, i64 = runtime::kInt64, b = runtime::kBool;
  int max_args = def.max_args < 0 ? def.min_args + 1 : def.max_args;
  for (int n = def.min_args; n <= max_args; ++n) {
    for (auto [first, rest] : {std::pair{f, f}, {f, i64}, {i64, f}, {b, f}, {i64, i64}, {b, b}}) {
      std::vector<ArgType> types;
      for (int i = 0; i < n; ++i) types.push_back({shape, i == 0 ? first : rest});
      try {
        return typed(types, required_attrs(def));
      } catch (const std::exception&) {
        continue;  // not this argument list
      }
    }
  }
  return Expr();
}

TEST(OpSchedule, EveryOpsTagHasATemplate) {
  std::string bad;
  for (const auto& name : OpRegistry::global().names()) {
    const OpDef& def = OpRegistry::global().get(name);
    if (!has_schedule(def.schedule_tag)) bad += "\n  " + name + ": tag '" + def.schedule_tag + "'";
  }
  EXPECT_TRUE(bad.empty()) << "ops whose schedule tag has no CPU template (add one in schedule/templates/):" << bad;
}

TEST(OpSchedule, EveryOpsComputeCarriesItsTag) {
  const auto hardware = targets::Target::parse("llvm").hardware();
  const auto samples = explicit_samples();
  std::string bad;
  for (const auto& name : OpRegistry::global().names()) {
    const OpDef& def = OpRegistry::global().get(name);
    Expr c = sample_call(def, samples);
    if (!c) {
      bad += "\n  " + name + ": no sample call (add one to explicit_samples)";
      continue;
    }
    CallCompute compute = compute_of_call(c.as<CallNode>(), hardware);
    for (size_t i = 0; i < compute.outputs.size(); ++i) {
      const auto* op = compute.outputs[i].as<tensor_ir::ComputeOp>();
      std::string tag = op ? op->tag : "(not computed)";
      if (i == 0 && tag != def.schedule_tag)
        bad += "\n  " + name + ": registered with tag '" + def.schedule_tag + "', computes '" + tag + "'";
      if (!has_schedule(tag))
        bad += "\n  " + name + ": output " + std::to_string(i) + "'s tag '" + tag + "' has no CPU template";
    }
  }
  EXPECT_TRUE(bad.empty()) << bad;
}

}  // namespace
}  // namespace tessera::driver
