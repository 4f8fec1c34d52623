// The shared core of convolutions (nn_conv.cc, nn_conv_winograd.cc): sizes, how to read the
// input and weight, and the epilogue every form ends in (not part of the public op library).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tensor_ir/ops/nn.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops::nn_detail {

struct ConvCore {
  std::string name;
  Expr n = 1;  // the batch, which may be symbolic
  int64_t c = 1, m = 1, groups = 1;
  std::vector<int64_t> kernel, strides, dilations;  // per spatial dimension
  // The (forward convolution's) input and the output spatial sizes, constants or expressions of
  // the sizes a kernel takes at run time (an image of symbolic height and width).
  std::vector<Expr> in, out;
  DataType acc, out_type;
  // The input in `acc` at padded coordinates (padding, zero points and dilation applied).
  std::function<Expr(const Expr& n, const Expr& c, const std::vector<Expr>& pos)> source;
  // The source is the raw input read directly (no padding, no conversion): no P stage needed.
  Tensor raw;
  // The input in `acc` at unpadded coordinates (zero point applied), and whether the
  // convolution has no padding (then a pointwise one is a plain matrix product).
  std::function<Expr(const Expr& n, const Expr& c, const std::vector<Expr>& pos)> input;
  bool unpadded = false;
  // Weight element (m, c within the group, kernel position) in `acc`.
  std::function<Expr(const Expr& m, const Expr& c, const std::vector<Expr>& k)> weight;
  // The weight already packed as the blocked or Winograd form reads it, or undefined.
  Tensor packed_weight;
  // Whether the weight comes, or may come, packed ahead of time: the Winograd form needs its
  // transform precomputed (done per call, it would cost more than the multiplications saved).
  bool prepacked = false;
  // Whether the weight comes transformed for the Winograd form (unset: choose by the sizes at
  // the size hints). The pass that packs weights chooses at its hints; lowering, which may compute
  // at other hints, follows the packing.
  std::optional<bool> winograd_weight;
  Tensor bias;          // [m] or undefined
  Registers registers;  // the target's, which size blocks, padded tiles and register tiles
  // The output value from the accumulated one (bias added) at output index v; default: a cast.
  std::function<Expr(const Expr& value, const std::vector<Var>& v)> finish;
};

// Whether every output spatial size is a constant (the forms chosen by sizes need them).
bool static_space(const ConvCore& c);

// Throws naming `op` unless the geometry has an entry per spatial dimension (two pads), positive
// strides, dilations and groups, and no negative pads.
void check_geometry(const std::string& op, size_t rank, const ConvGeometry& g);

// The data's channels `channels` as a constant; where they are a variable by itself, the
// DimensionRequirement (tensor_ir/dimension_must_equal.h) that fixes it to `expected` (what the
// weight says); any other expression is an error naming `op` and the data's shape.
int64_t constant_channels(const std::string& op, const Expr& channels, int64_t expected,
                          const std::vector<int64_t>& weight, const std::vector<Expr>& data);

// Y[n, m, out..] (tag "conv_epilogue"): the accumulated value `product(v)` with the bias added,
// finished (or cast to the output type).
Tensor epilogue(const ConvCore& c, const std::function<Expr(const std::vector<Var>&)>& product);

// The Winograd form (nn_conv_winograd.cc): whether the convolution's shapes and weight allow it
// (3x3, stride 1, a prepacked weight), whether it pays at its sizes (an expression of them:
// constant where they are), whether it applies (it fits, and the weight comes transformed or, for
// a weight not packed yet, it pays at the size hints), its weight packed ahead of time (the
// panels winograd_weight_shape gives, which winograd reads from c.packed_weight), the computation.
bool winograd_fits(const ConvCore& c);
Expr winograd_pays(const ConvCore& c);
bool winograd_applies(const ConvCore& c);
std::vector<int64_t> winograd_weight_shape(const ConvCore& c);
Tensor winograd_weight(const ConvCore& c);
Tensor winograd(const ConvCore& c);

}  // namespace tessera::tensor_ir::ops::nn_detail
