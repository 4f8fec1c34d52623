// Compute definitions of the nn family: matrix products, convolutions, pooling, normalizations,
// softmax and losses. Each returns ordinary compute tensors (with the packing or padding stages
// their fast schedules need already in the definition) whose `tag` names their CPU template.
// The shape helpers are shared with the graph-level type relations so both agree exactly.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// The vector registers of the CPU a product or convolution is built for, which size its packed
// layouts, padded tiles and register tiles: the target's (schedule::HardwareParams, reaching the
// graph's ops through their call's attributes). Compute definitions have no width of their own;
// a layout packed for other registers than the kernel reading it is refused by shape.
struct Registers {
  int64_t vector_bytes = 0;  // one register: 64 AVX-512, 32 AVX2, 16 SSE and NEON
  int64_t count = 0;         // how many: 32 AVX-512 and NEON, 16 AVX2 and SSE
  // Lanes of one register of `acc`; throws when the registers were not given.
  int64_t lanes(DataType acc) const;
  // A device whose threads each compute scalars (a GPU): one 4-byte lane in one register. Compute
  // definitions take their plain forms for it (direct convolutions, unpacked products), which
  // GPU schedules tile themselves.
  static Registers scalar_device() { return {4, 1}; }
  bool is_scalar_device() const { return vector_bytes == 4 && count == 1; }
};

// --- matrix products (nn_matmul.cc, nn_einsum.cc) -----------------------------------------

// numpy matmul: a 1-D `a` is a row, a 1-D `b` a column (the added dimension is removed from the
// result); leading batch dimensions broadcast.
// With packed_columns > 0, `b` is matmul_pack_weight's packing of a [.., K, packed_columns] operand;
// with trans_b, `b` is [.., N, K] (rank >= 2, unpacked): a @ swapaxes(b, -1, -2) without the copy.
Tensor matmul(const Tensor& a, const Tensor& b, const Registers& regs, int64_t packed_columns = 0,
              bool trans_b = false);
std::vector<int64_t> matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// The same for symbolic extents: inner and batch dimensions must be provably equal (or 1).
std::vector<Expr> matmul_shape(const std::vector<Expr>& a, const std::vector<Expr>& b);
// The register tile of a packed product: rows of the result, and columns (two vectors of the
// accumulation type, one when n fits in one, three when that alone makes whole panels). The
// packed result is padded to whole tiles.
int64_t matmul_tile_rows(int64_t m, const Registers& regs);
int64_t matmul_tile_cols(DataType acc, int64_t n, const Registers& regs);
// alpha * op(a) @ op(b) + beta * c for 2-D a and b, op transposing when asked; `c` (may be
// undefined) broadcasts to the result. With packed_columns > 0, `b` is matmul_pack_weight's
// packing of a [K, packed_columns] operand (trans_b must then be false).
Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a, bool trans_b, double alpha, double beta,
            const Registers& regs, int64_t packed_columns = 0);
// Right operands packed ahead of time (for constant ones, by the graph's AlterOpLayout): b
// [batch.., K, N] (or [batch.., N, K] with `trans`) as the panels [batch.., N / nr, K, nr] (zeros
// past N, in the accumulation type) the product's kernel reads. A product reads a packed operand
// whatever its row count (packing per call pays only with 4 rows or more): packable when both
// operands have rank >= 2 (a's rank given) and b at least one vector of columns. The unpacked shape is that of
// the operand a packing of `columns` columns came from; it fails for any other shape.
bool matmul_weight_packable(size_t a_rank, const std::vector<int64_t>& b, bool trans, DataType dtype,
                            const Registers& regs);
std::vector<int64_t> matmul_packed_weight_shape(const std::vector<int64_t>& b, bool trans, DataType dtype,
                                                const Registers& regs);
std::vector<int64_t> matmul_unpacked_weight_shape(const std::vector<int64_t>& packed, int64_t columns, DataType dtype,
                                                  const Registers& regs);
Tensor matmul_pack_weight(const Tensor& b, bool trans, const Registers& regs);
// Integer matmul accumulated in int32: (a - a_zero) @ (b - b_zero). a_zero is a scalar or one
// value per row of a; b_zero a scalar or one per column of b.
Tensor matmul_integer(const Tensor& a, const Tensor& b, const Tensor& a_zero, const Tensor& b_zero,
                      const Registers& regs);
// QLinearMatMul: matmul_integer, then each int32 sum requantized to y's type:
// saturate(round_half_even(sum * a_scale * b_scale / y_scale) + y_zero). Scales are float32;
// a_scale and a_zero may hold one value per row, b_scale and b_zero one per column.
Tensor qlinear_matmul(const Tensor& a, const Tensor& a_scale, const Tensor& a_zero, const Tensor& b,
                      const Tensor& b_scale, const Tensor& b_zero, const Tensor& y_scale, const Tensor& y_zero,
                      const Registers& regs);
// Scaled dot-product attention over the last two axes, softmax(q @ k^T * scale + bias) @ v: q
// [.., L, D], k [.., D, S] (or [.., S, D] with trans_k), v [.., S, Dv], float32, equal batch
// dimensions; `bias` (may be undefined) broadcasts to the scores [.., L, S]: float32, added to
// them, or a bool mask, the scores replaced by `fill` where it is false (`keep`) or true (not
// `keep`: masked_fill) (nn_attention.cc). Its kernel keeps a block of rows' scores in cache.
struct AttentionOptions {
  double scale = 1.0;
  bool trans_k = false;
  double fill = 0.0;
  bool keep = true;
};
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, const AttentionOptions& options,
                 const Registers& regs);
// Its output shape [.., L, Dv]; throws naming the shapes when they do not fit.
std::vector<Expr> attention_shape(const std::vector<Expr>& q, const std::vector<Expr>& k, const std::vector<Expr>& v,
                                  bool trans_k);
// Throws unless a bias of shape `bias` broadcasts to the scores [.., L, S] of queries `q` and keys `k`.
void check_attention_bias(const std::vector<Expr>& bias, const std::vector<Expr>& q, const std::vector<Expr>& k,
                          bool trans_k);
// Einstein summation over any operands ("ij,jk->ik", "...ii->...i", "ij->"); a letter repeated
// within one operand takes its diagonal.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
// The output shape of an einsum; throws naming the equation when operands do not fit it.
std::vector<Expr> einsum_shape(const std::string& equation, const std::vector<std::vector<Expr>>& operands);

// --- convolution (nn_conv.cc) ------------------------------------------------------------

// Spatial geometry: one entry per spatial dimension; pads hold all begins, then all ends.
struct ConvGeometry {
  std::vector<int64_t> strides, pads, dilations;
  int64_t groups = 1;
  std::vector<int64_t> output_padding;  // conv_transpose only
};
// data [N, C, spatial...], weight [M, C / groups, kernel...] -> [N, M, out...]. The batch and
// spatial sizes may be symbolic (the channels may not): an output size is then
// floordiv(size + pads - window, stride) + 1, which is below 1 where the size is too small.
std::vector<int64_t> conv_shape(const std::vector<int64_t>& data, const std::vector<int64_t>& weight,
                                const ConvGeometry& g);
std::vector<Expr> conv_shape(const std::vector<Expr>& data, const std::vector<int64_t>& weight, const ConvGeometry& g);
// The output positions along the last spatial dimension one register tile of a blocked
// convolution holds, for `vectors` vectors of output channels (the product pads to whole tiles).
int64_t conv_tile_width(int64_t width, int64_t vectors, const Registers& regs);
// The output rows a depthwise convolution computes together (its product pads the rows to it).
int64_t depthwise_row_block(int64_t rows);
// The strip form (float convolutions of at most kMaxStripChannels input channels) computes
// strip_block(regs) output channels x one vector of positions together: an accumulator per
// channel, half the registers, leaving the rest for the inputs and broadcast weights (16
// accumulators on a CPU of 16 registers spilled in the inner loop).
constexpr int64_t kMaxStripChannels = 4;
inline int64_t strip_block(const Registers& regs) { return std::min<int64_t>(16, regs.count / 2); }
// `bias` [M] may be undefined. With packed_channels > 0, `weight` is a [packed_channels, C /
// groups, kernel...] weight packed ahead of time as this convolution reads it (see below); with
// `direct_weight` beside it, `weight` is the Winograd packing and `direct_weight` the blocked one,
// and the form is chosen at the size hints (a kernel per form, conv_winograd_condition choosing).
Tensor conv(const Tensor& data, const Tensor& weight, const Tensor& bias, const ConvGeometry& g, const Registers& regs,
            int64_t packed_channels = 0, const Tensor& direct_weight = Tensor());
// Weights packed ahead of time (for constant weights, by the graph's AlterOpLayout), in the
// accumulation type. The blocked form reads Wp[m / block, c, k.., m % block] (zeros past M,
// conv_pack_weight), and so does the pointwise one, in blocks of its register tile's rows (so a
// tile's weights are one contiguous stream), or of its tile's columns when few positions make
// them the rows; the Winograd form (3x3, stride 1) its transformed weight U = G g G^T as the
// matrix-product panels [36, M / nr, C, nr] (conv_winograd_weight). conv_weight_packing tells
// which a convolution of these shapes reads; the other forms read the weight as it is.
// Where the Winograd form pays at some of a convolution's symbolic sizes and not at others
// (winograd_at_some_sizes), it reads both the Winograd packing and the blocked one.
struct ConvWeightPacking {
  enum Kind { Unpacked, Blocked, Winograd } kind = Unpacked;
  int64_t block = 0;  // Blocked, or Winograd at some sizes only: output channels per block
  bool winograd_at_some_sizes = false;
};
ConvWeightPacking conv_weight_packing(const std::vector<Expr>& data, const std::vector<int64_t>& weight,
                                      const ConvGeometry& g, DataType dtype, const Registers& regs);
// Where a convolution of `data` with a [M, C, 3, 3] `weight` takes the Winograd form: a boolean
// expression of its sizes (constant where they are), which chooses the form at each call of a
// convolution reading both packings.
Expr conv_winograd_condition(const std::vector<Expr>& data, const std::vector<int64_t>& weight, const ConvGeometry& g,
                             DataType dtype, const Registers& regs);
std::vector<int64_t> conv_packed_weight_shape(const std::vector<int64_t>& weight, int64_t block);
Tensor conv_pack_weight(const Tensor& weight, int64_t block);
std::vector<int64_t> conv_winograd_weight_shape(const std::vector<int64_t>& weight, const Registers& regs);
Tensor conv_winograd_weight(const Tensor& weight, const Registers& regs);
// What conv_unpacked_weight_shape throws where the convolution's form at these sizes (or their
// hints) reads another packing than its weight's: a symbolic pointwise one whose positions are
// hinted few enough for the blocked form.
class WeightPackedForAnotherForm : public Error {
 public:
  using Error::Error;
};
// The [channels, C / groups, kernel...] weight a packed one came from, for a convolution of
// `data` that reads that packing; throws WeightPackedForAnotherForm, naming the packing it
// reads, otherwise.
std::vector<int64_t> conv_unpacked_weight_shape(const std::vector<Expr>& data, const std::vector<int64_t>& packed,
                                                int64_t channels, const ConvGeometry& g, DataType dtype,
                                                const Registers& regs);
// Integer convolution accumulated in int32 over (data - data_zero) and (weight - weight_zero);
// padding reads data_zero (so it contributes nothing). data_zero is a scalar, weight_zero a
// scalar or one value per output channel.
Tensor conv_integer(const Tensor& data, const Tensor& weight, const Tensor& data_zero, const Tensor& weight_zero,
                    const ConvGeometry& g, const Registers& regs);
// QLinearConv: conv_integer plus the int32 bias (may be undefined), requantized as
// qlinear_matmul does; w_scale and w_zero may hold one value per output channel.
Tensor qlinear_conv(const Tensor& data, const Tensor& data_scale, const Tensor& data_zero, const Tensor& weight,
                    const Tensor& weight_scale, const Tensor& weight_zero, const Tensor& y_scale, const Tensor& y_zero,
                    const Tensor& bias, const ConvGeometry& g, const Registers& regs);
// data [N, C, spatial...], weight [C, M / groups, kernel...] -> [N, M, out...] with
// out = stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pad_begin - pad_end.
std::vector<int64_t> conv_transpose_shape(const std::vector<int64_t>& data, const std::vector<int64_t>& weight,
                                          const ConvGeometry& g);
// The same of symbolic batch and spatial sizes.
std::vector<Expr> conv_transpose_shape(const std::vector<Expr>& data, const std::vector<int64_t>& weight,
                                       const ConvGeometry& g);
Tensor conv_transpose(const Tensor& data, const Tensor& weight, const Tensor& bias, const ConvGeometry& g,
                      const Registers& regs);

// --- channels-last convolution (nn_conv_nhwc.cc) -----------------------------------------

// 2-D convolution of data [N, H, W, C] (with nchw_data, [N, C, H, W], read transposed) with
// weight [KH, KW, C / groups, M] (HWIO), optional bias [M] -> [N, OH, OW, M], the batch and
// spatial sizes constants or expressions (those of the data: symbolic). The depthwise form
// (one input channel per group) and the dense one are scheduled for the CPU; a 1x1 convolution
// in this layout is a plain matmul, which the graph uses instead.
std::vector<Expr> conv_nhwc_shape(const std::vector<Expr>& data, const std::vector<int64_t>& weight,
                                  const ConvGeometry& g, bool nchw_data);
Tensor conv_nhwc(const Tensor& data, const Tensor& weight, const Tensor& bias, const ConvGeometry& g, bool nchw_data);

// --- pooling (nn_pool.cc) ----------------------------------------------------------------

struct PoolGeometry {
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceil_mode = false;
};
// [N, C, spatial...] -> [N, C, out...]; with ceil_mode a window that would start past the input
// and its left padding is dropped (as PyTorch and ONNX Runtime do).
std::vector<int64_t> pool_shape(const std::vector<int64_t>& data, const PoolGeometry& g);
// The same of symbolic spatial sizes (the window's checks then at each call: an output size
// below 1 is what a size too small gives).
std::vector<Expr> pool_shape(const std::vector<Expr>& data, const PoolGeometry& g);
Tensor max_pool(const Tensor& data, const PoolGeometry& g);
// The flat index (into the whole input, row-major, or column-major over the spatial dimensions
// when storage_order is 1) of the first maximum of each window, as int64.
Tensor max_pool_indices(const Tensor& data, const Tensor& pooled, const PoolGeometry& g, int storage_order);
// Average over the window; count_include_pad counts the padding (not what lies past it in
// ceil mode), otherwise only elements inside the input count.
Tensor avg_pool(const Tensor& data, const PoolGeometry& g, bool count_include_pad);
// (sum |x|^p) ^ (1/p) over the window, padding reading zero.
Tensor lp_pool(const Tensor& data, const PoolGeometry& g, double p);
// Over all spatial dimensions, keeping them as size 1: kind is "avg", "max" or "lp".
Tensor global_pool(const Tensor& data, const std::string& kind, double p = 2);
// Inverse of max_pool: each input element goes to the output position its index names; other
// outputs are 0. Indices must come from a max_pool of the same kernel, strides and pads (an index
// outside its element's window is not found).
// An output_shape (empty: the unpooled shape) gives the spatial sizes, each at least the unpooled
// one; its batch and channels are the data's.
Tensor max_unpool(const Tensor& data, const Tensor& indices, const PoolGeometry& g,
                  const std::vector<Expr>& output_shape);
// The shape of max_pool's input that gives `pooled` (of [N, C, spatial...] sizes) under `g`.
std::vector<Expr> unpooled_shape(const std::vector<Expr>& pooled, const PoolGeometry& g);

// --- normalization (nn_norm.cc) ----------------------------------------------------------

// Inference: (x - mean) / sqrt(var + epsilon) * scale + bias along axis 1.
Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                  double epsilon);
// Per (n, c): normalizes over the spatial dimensions, then scale[c] and bias[c].
Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon);
// Normalizes over dimensions axis.. (statistics in float32 at least), then * scale + bias
// (broadcasting; bias may be undefined). Returns {y, mean, inv_std_dev}; the statistics have the
// shape of x with dimensions axis.. set to 1 and dtype `stat_dtype`.
std::vector<Tensor> layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis, double epsilon,
                               DataType stat_dtype);
// Local response normalization across channels:
// x / (bias + alpha / size * sum of x^2 over the size channels around c) ^ beta.
Tensor lrn(const Tensor& x, int64_t size, double alpha, double beta, double bias);
// (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9) over `axes` (ONNX MeanVarianceNormalization).
Tensor mean_variance_normalization(const Tensor& x, const std::vector<int64_t>& axes);

// --- softmax and losses (nn_softmax.cc) --------------------------------------------------

// Along `axis`; with `trailing` over axis and every later dimension jointly (ONNX before 13).
Tensor softmax(const Tensor& x, int64_t axis, bool trailing = false);
Tensor log_softmax(const Tensor& x, int64_t axis, bool trailing = false);
// 1 at the first maximum along the axis (or the trailing block), 0 elsewhere.
Tensor hardmax(const Tensor& x, int64_t axis, bool trailing = false);
// Negative log-likelihood: input [N, C, d...] (log-probabilities), target [N, d...] integers,
// weight [C] (may be undefined). reduction "none" gives [N, d...]; "sum" and "mean" a scalar
// (mean divides by the summed weights of the counted targets). Targets equal to ignore_index
// count for nothing.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, const std::string& reduction,
                int64_t ignore_index);

// The dtype weights of `t` are packed in (conv_pack_weight, matmul_pack_weight): the type the
// products accumulate in, float32 for float16.
DataType packed_weight_dtype(DataType t);

// A dimension index in [0, rank); throws naming `what` when out of range.
int64_t normalize_axis(int64_t axis, size_t rank, const std::string& what);

}  // namespace tessera::tensor_ir::ops
