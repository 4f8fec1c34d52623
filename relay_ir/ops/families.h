// The op families; each file in relay_ir/ops/ registers one. Adding a family is one line here
// and one in register_all_op_families (op_families.cc).
#pragma once

namespace tessera::relay_ir {

class OpRegistry;

void register_math_ops(OpRegistry& r);       // elementwise, broadcasting, reductions (math.cc)
void register_nn_ops(OpRegistry& r);         // matmul, convolution, pooling, normalization, softmax, losses (nn.cc)
void register_transform_ops(OpRegistry& r);  // shape and data movement (transform.cc)
void register_extra_ops(OpRegistry& r);      // signal processing, recurrent nets, sampling, linear algebra (extra.cc)
// Gradients, registered beside each family's ops (<family>_grad.cc) once all ops exist, since
// a gradient is built from ops of any family.
void register_math_gradients(OpRegistry& r);
void register_nn_gradients(OpRegistry& r);
void register_transform_gradients(OpRegistry& r);

void register_all_op_families(OpRegistry& r);

}  // namespace tessera::relay_ir
