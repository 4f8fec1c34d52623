// The op families; each family's files in relay_ir/ops/ register its ops. Adding a family is one
// line here and one in register_all_op_families (op_families.cc).
//
// Adding an op to a family touches:
//   - its family's file here (<family>.cc or the <family>_<group>.cc of its group): one r.add
//     with its attributes, type relation, fusion pattern, compute (which calls a compute
//     definition in tensor_ir/ops/) and gradient (a GradientFn built from graph ops; leave it
//     out for an op that is not differentiable);
//   - its compute definition in tensor_ir/ops/, whose output stage's tag picks its default
//     schedule: an existing tag reuses that tag's template, a new tag needs a template in
//     schedule/templates/ (tests/driver/op_schedule_test.cc fails for an op whose tag has none);
//   - its ONNX converter in frontend/onnx/, if ONNX has the op.
#pragma once

namespace tessera::relay_ir {

class OpRegistry;

void register_math_ops(OpRegistry& r);       // elementwise, broadcasting, reductions (math*.cc)
void register_nn_ops(OpRegistry& r);         // matmul, convolution, pooling, normalization, softmax, losses (nn*.cc)
void register_transform_ops(OpRegistry& r);  // shape and data movement (transform*.cc)
void register_extra_ops(OpRegistry& r);      // sampling, linear algebra (extra.cc)

void register_all_op_families(OpRegistry& r);

}  // namespace tessera::relay_ir
