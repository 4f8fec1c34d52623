// Convolutions of any spatial rank. All variants (float, integer with zero points, transposed)
// go through one core with four forms:
//  * pointwise (1x1, unpadded, one group, any stride): the matrix product core (nn_matmul.cc),
//    the weight its rows (read as it is, or in tiles of rows from conv_pack_weight), or, packed
//    and where positions pad badly as columns (7x7, 14x14 with long reductions), its columns,
//    the positions then being the rows;
//  * blocked (tag "conv"): output channels in blocks of one or two vectors (ocv) are the
//    innermost dimension of the product R[n, m / ocv, spatial.., m % ocv], and the last spatial
//    dimension is padded to whole tiles, so the "conv" template keeps a tile of outputs x ocv
//    channels in registers: each step broadcasts one input and multiplies a packed weight
//    vector Wp[m / ocv, c, k.., m % ocv] (tag "conv_pack"), or reads the same layout from a
//    weight packed ahead of time by conv_pack_weight (the graph's AlterOpLayout pass);
//  * depthwise (one input channel per group, tag "depthwise_conv"): R[n, m, spatial..] with the
//    last dimension padded to whole vectors, vectorized along it (with a stride, from P split
//    by phase, so each vector reads a contiguous run);
//  * strip (at most 4 input channels, tag "conv_strip"): R[n, m, spatial..] with vectors of
//    positions along x and blocks of output channels (the template's register tile);
//  * Winograd (3x3, stride 1, float32, enough 4x4 output tiles; nn_conv_winograd.cc);
//  * direct (other grouped shapes, tag "conv_direct"), left to the generic schedule.
// Padding (and zero points, and the zeros a transposed convolution inserts) live in a padded
// input stage P (tag "conv_pad") so the inner loops read it without conditions; the epilogue Y
// (tag "conv_epilogue") drops the tile padding, adds the bias and casts.
#include <algorithm>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_conv_core.h"
#include "tensor_ir/ops/nn_util.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/size_hint.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace nn_detail {

bool static_space(const ConvCore& c) {
  return std::all_of(c.out.begin(), c.out.end(), [](const Expr& o) { return as_const_int(o) != nullptr; });
}

Tensor epilogue(const ConvCore& c, const std::function<Expr(const std::vector<Var>&)>& product) {
  std::vector<Expr> shape{Expr(c.n), Expr(c.m)};
  shape.insert(shape.end(), c.out.begin(), c.out.end());
  std::vector<std::string> names{"n", "m"};
  for (size_t d = 0; d < c.out.size(); ++d) names.push_back("o" + std::to_string(d));
  return compute(
      shape,
      [&](const std::vector<Var>& v) {
        Expr y = product(v);
        if (c.bias.defined()) y = y + read_as(c.bias, {v[1]}, c.acc);
        return c.finish ? c.finish(y, v) : cast(c.out_type, y);
      },
      c.name, "conv_epilogue", names);
}

int64_t constant_channels(const std::string& op, const Expr& channels, int64_t expected,
                          const std::vector<int64_t>& weight, const std::vector<Expr>& data) {
  if (const int64_t* c = as_const_int(channels)) return *c;
  require_constant_dim(channels, expected,
                       op + ": the data's channels " + to_string(channels) + " must be " + std::to_string(expected) +
                           ", as the weight " + runtime::shape_str(weight) + " says");
  fail(op, ": the data's channels must be a constant, got ", shape_str(data));
}

void check_geometry(const std::string& op, size_t rank, const ConvGeometry& g) {
  if (g.strides.size() != rank || g.dilations.size() != rank || g.pads.size() != 2 * rank)
    fail(op, ": strides, dilations and pads must have ", rank, ", ", rank, " and ", 2 * rank, " entries for ", rank,
         " spatial dimensions, got ", g.strides.size(), ", ", g.dilations.size(), " and ", g.pads.size());
  for (size_t d = 0; d < rank; ++d)
    if (g.strides[d] < 1 || g.dilations[d] < 1) fail(op, ": strides and dilations must be positive");
  for (int64_t p : g.pads)
    if (p < 0) fail(op, ": pads must not be negative, got ", p);
  if (g.groups < 1) fail(op, ": groups must be positive, got ", g.groups);
}

}  // namespace nn_detail

namespace {

std::vector<std::string> spatial_names(size_t rank, const std::string& prefix) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d) names.push_back(prefix + std::to_string(d));
  return names;
}

// P covering `extent` positions per spatial dimension (or the raw input when it needs no stage).
// `phased` splits the last dimension by phase: P[n, c, p.., phase, q] is position
// q * stride + phase, so a vector of positions along x, every stride-th column, is a contiguous
// run of one phase for every kernel tap (push_input_pos); the copy into P reads the strided
// columns once.
Tensor padded_input(const ConvCore& c, std::vector<Expr> extent, bool phased = false) {
  if (c.raw.defined()) return c.raw;
  size_t rank = extent.size();
  int64_t stride = c.strides.back();
  if (phased) {
    extent.back() = ceil_div(extent.back(), stride);
    extent.insert(extent.end() - 1, Expr(stride));
  }
  std::vector<Expr> shape{Expr(c.n), Expr(c.c)};
  shape.insert(shape.end(), extent.begin(), extent.end());
  std::vector<std::string> names{"n", "c"};
  for (const auto& s : spatial_names(rank, "p")) names.push_back(s);
  if (phased) {
    names.back() = "phase";
    names.push_back("q");
  }
  return compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> pos(v.begin() + 2, v.begin() + 2 + rank);
        if (phased) pos.back() = v.back() * Expr(stride) + v[1 + rank];
        return c.source(v[0], v[1], pos);
      },
      c.name + "_pad", "conv_pad", names);
}

// Positions of P read for output positions 0..out-1 per dimension (`out` padded as the product is).
std::vector<Expr> needed_extent(const ConvCore& c, const std::vector<Expr>& out) {
  std::vector<Expr> e;
  for (size_t d = 0; d < out.size(); ++d)
    e.push_back(
        arith::simplify((out[d] - Expr(1)) * Expr(c.strides[d]) + Expr((c.kernel[d] - 1) * c.dilations[d] + 1)));
  return e;
}

// The output sizes with the last one padded to `last`.
std::vector<Expr> with_last(std::vector<Expr> out, Expr last) {
  out.back() = std::move(last);
  return out;
}

// The index of P for output position `o` and kernel position `k` along dimension d; reads of
// the raw input clamp the padded tail of the last dimension (its results are dropped).
Expr input_pos(const ConvCore& c, size_t d, const Expr& o, const Expr& k) {
  bool clamp = c.raw.defined() && d + 1 == c.out.size();
  Expr oo = clamp ? min(o, arith::simplify(c.out[d] - Expr(1))) : o;
  return oo * Expr(c.strides[d]) + k * Expr(c.dilations[d]);
}

// Appends the indices of P for output position `o` and kernel position `k` along dimension d:
// two (phase, q) along the last dimension of a P split by phase.
void push_input_pos(std::vector<Expr>& idx, const ConvCore& c, size_t d, const Expr& o, const Expr& k, bool phased) {
  int64_t stride = c.strides[d];
  if (!phased || d + 1 < c.out.size()) {
    idx.push_back(input_pos(c, d, o, k));
    return;
  }
  Expr tap = k * Expr(c.dilations[d]);  // column o * stride + tap: phase tap % stride
  idx.push_back(floormod(tap, Expr(stride)));
  idx.push_back(o + floordiv(tap, Expr(stride)));
}

std::vector<IterVar> kernel_axes(const ConvCore& c) {
  std::vector<IterVar> r;
  for (size_t d = 0; d < c.kernel.size(); ++d)
    r.push_back(reduce_axis(Range(Expr(0), Expr(c.kernel[d])), "r" + std::to_string(d)));
  return r;
}

// The blocked form's weight: Wp[m / ocv, c, k.., m % ocv] (zeros past m), in `acc`.
Tensor pack_weight(const ConvCore& c, int64_t ocv) {
  int64_t blocks = (c.m + ocv - 1) / ocv;
  std::vector<Expr> wshape{Expr(blocks), Expr(c.c / c.groups)};
  for (int64_t k : c.kernel) wshape.push_back(Expr(k));
  wshape.push_back(Expr(ocv));
  std::vector<std::string> wnames{"mo", "c"};
  for (const auto& s : spatial_names(c.kernel.size(), "k")) wnames.push_back(s);
  wnames.push_back("mi");
  return compute(
      wshape,
      [&](const std::vector<Var>& v) {
        Expr mm = v[0] * Expr(ocv) + v.back();
        std::vector<Expr> k(v.begin() + 2, v.end() - 1);
        return select(mm < Expr(c.m), c.weight(mm, v[1], k), make_zero(c.acc));  // lazy: no read past m
      },
      c.name + "_packed_weight", "conv_pack", wnames);
}

Tensor blocked(const ConvCore& c, int64_t ocv) {
  size_t rank = c.out.size();
  int64_t cg = c.c / c.groups, mg = c.m / c.groups;
  int64_t tile = conv_tile_width(tile_size_hint(c.out.back()), ocv / c.registers.lanes(c.acc), c.registers);
  std::vector<Expr> padded = with_last(c.out, round_up(c.out.back(), tile));
  Tensor p = padded_input(c, needed_extent(c, padded));
  int64_t blocks = (c.m + ocv - 1) / ocv;
  Tensor wp = c.packed_weight.defined() ? c.packed_weight : pack_weight(c, ocv);
  std::vector<Expr> shape{Expr(c.n), Expr(blocks)};
  shape.insert(shape.end(), padded.begin(), padded.end());
  shape.push_back(Expr(ocv));
  std::vector<std::string> names{"n", "mo"};
  for (const auto& s : spatial_names(rank, "o")) names.push_back(s);
  names.push_back("mi");
  IterVar rc = reduce_axis(Range(Expr(0), Expr(cg)), "rc");
  std::vector<IterVar> rk = kernel_axes(c);
  Tensor r = compute(
      shape,
      [&](const std::vector<Var>& v) {
        // A block lies in one group (ocv divides m / groups), so its lanes share the input channel.
        Expr ch = floordiv(v[1] * Expr(ocv), Expr(mg)) * Expr(cg) + rc;
        std::vector<Expr> pidx{v[0], ch};
        std::vector<Expr> widx{v[1], rc};
        for (size_t d = 0; d < rank; ++d) {
          pidx.push_back(input_pos(c, d, v[2 + d], rk[d]));
          widx.push_back(rk[d]);
        }
        widx.push_back(v.back());
        std::vector<IterVar> axes{rc};
        axes.insert(axes.end(), rk.begin(), rk.end());
        Expr x = c.raw.defined() ? read_as(p, pidx, c.acc) : p(pidx);
        return sum(x * wp(widx), axes);
      },
      c.name + "_blocked", "conv", names);
  return epilogue(c, [&](const std::vector<Var>& v) {
    std::vector<Expr> idx{v[0], floordiv(v[1], Expr(ocv))};
    for (size_t d = 0; d < rank; ++d) idx.push_back(v[2 + d]);
    idx.push_back(floormod(v[1], Expr(ocv)));
    return r(idx);
  });
}

// Few input channels (an image's 3 colours): with so short a reduction the blocked form spends
// much of its time storing its tiles (channels in the lanes) through a transposing gather.
// Here the lanes are positions along x: R[n, m, spatial.., x] with x padded to whole vectors
// and m to whole blocks, each step a vector of inputs (with a stride along x, from P split by
// phase: a strided load's shuffle per step cost the 7x7 stem 15%) times a block of broadcast
// weights read from Wp[m / block, c, k.., m % block] (the blocked packing); the epilogue stores
// R's rows as they are.
Tensor strip(const ConvCore& core, int64_t block) {
  size_t rank = core.out.size();
  int64_t lanes = core.registers.lanes(core.acc);
  std::vector<Expr> padded = with_last(core.out, round_up(core.out.back(), lanes));
  ConvCore c = core;
  c.raw = Tensor();  // P always: reads of the raw input would clamp the vectors' tail into gathers
  bool phased = c.strides.back() > 1;
  Tensor p = padded_input(c, needed_extent(c, padded), phased);
  Tensor wp = c.packed_weight.defined() ? c.packed_weight : pack_weight(c, block);
  std::vector<Expr> shape{Expr(c.n), Expr((c.m + block - 1) / block * block)};
  shape.insert(shape.end(), padded.begin(), padded.end());
  std::vector<std::string> names{"n", "m"};
  for (const auto& s : spatial_names(rank, "o")) names.push_back(s);
  IterVar rc = reduce_axis(Range(Expr(0), Expr(c.c)), "rc");
  std::vector<IterVar> rk = kernel_axes(c);
  Tensor r = compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> pidx{v[0], rc};
        std::vector<Expr> widx{floordiv(v[1], Expr(block)), rc};
        for (size_t d = 0; d < rank; ++d) {
          push_input_pos(pidx, c, d, v[2 + d], rk[d], phased);
          widx.push_back(rk[d]);
        }
        widx.push_back(floormod(v[1], Expr(block)));
        std::vector<IterVar> axes{rc};
        axes.insert(axes.end(), rk.begin(), rk.end());
        return sum(p(pidx) * wp(widx), axes);
      },
      c.name + "_strip", "conv_strip", names);
  return epilogue(c, [&](const std::vector<Var>& v) { return r(as_exprs(v)); });
}

Tensor depthwise(const ConvCore& core) {
  size_t rank = core.out.size();
  int64_t mult = core.m / core.groups;
  int64_t lanes = core.registers.lanes(core.acc);
  // The product is padded to whole vectors along the last dimension and to whole row blocks
  // along the one before (the template computes a block of rows per vector of outputs, so each
  // input row loaded serves every output row of the block).
  std::vector<Expr> padded = core.out;
  const int64_t width = tile_size_hint(padded.back());
  if (width >= lanes) padded.back() = round_up(padded.back(), lanes);
  if (rank >= 2) padded[rank - 2] = round_up(padded[rank - 2], depthwise_row_block(tile_size_hint(padded[rank - 2])));
  // The padding must come from P, never from clamped reads of the input (vectors along x).
  // With a stride along x, a vector of outputs reads every stride-th column: P is split by phase
  // so that it reads a contiguous run (narrow rows excepted, where the copy into P costs more
  // than the shuffles it saves).
  ConvCore c = core;
  bool phased = c.strides.back() > 1 && 2 * tile_size_hint(padded.back()) > lanes;
  bool tile_padded = false;
  for (size_t d = 0; d < rank; ++d) tile_padded = tile_padded || !padded[d].same_as(c.out[d]);
  if (tile_padded || phased) c.raw = Tensor();
  Tensor p = padded_input(c, needed_extent(c, padded), phased);
  std::vector<Expr> shape{Expr(c.n), Expr(c.m)};
  shape.insert(shape.end(), padded.begin(), padded.end());
  std::vector<std::string> names{"n", "m"};
  for (const auto& s : spatial_names(rank, "o")) names.push_back(s);
  std::vector<IterVar> rk = kernel_axes(c);
  Tensor r = compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> pidx{v[0], floordiv(v[1], Expr(mult))};
        std::vector<Expr> k;
        for (size_t d = 0; d < rank; ++d) {
          push_input_pos(pidx, c, d, v[2 + d], rk[d], phased);
          k.push_back(rk[d]);
        }
        Expr x = c.raw.defined() ? read_as(p, pidx, c.acc) : p(pidx);
        return sum(x * c.weight(v[1], Expr(0), k), rk);
      },
      c.name + "_depthwise", "depthwise_conv", names);
  return epilogue(c, [&](const std::vector<Var>& v) { return r(as_exprs(v)); });
}

Tensor direct(const ConvCore& core) {
  size_t rank = core.out.size();
  int64_t cg = core.c / core.groups, mg = core.m / core.groups;
  // A last dimension of symbolic size, or of a constant size above a vector that vectors do not
  // divide, is padded to whole vectors, read from P: the generic schedule's vectors of positions
  // then each accumulate over the whole reduction in a register, where a loop of symbolic length
  // ran scalar and a partial vector accumulated through memory. A shorter constant width is a
  // vector of its own length.
  ConvCore c = core;
  std::vector<Expr> out = c.out;
  const int64_t lanes = c.registers.lanes(c.acc);
  const int64_t* width = as_const_int(out.back());
  if (lanes > 1 && (!width || (*width > lanes && *width % lanes != 0))) {
    out.back() = round_up(out.back(), lanes);
    c.raw = Tensor();
  }
  Tensor p = padded_input(c, needed_extent(c, out));
  std::vector<Expr> shape{Expr(c.n), Expr(c.m)};
  shape.insert(shape.end(), out.begin(), out.end());
  std::vector<std::string> names{"n", "m"};
  for (const auto& s : spatial_names(rank, "o")) names.push_back(s);
  IterVar rc = reduce_axis(Range(Expr(0), Expr(cg)), "rc");
  std::vector<IterVar> rk = kernel_axes(c);
  Tensor r = compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> pidx{v[0], floordiv(v[1], Expr(mg)) * Expr(cg) + rc};
        std::vector<Expr> k;
        for (size_t d = 0; d < rank; ++d) {
          pidx.push_back(input_pos(c, d, v[2 + d], rk[d]));
          k.push_back(rk[d]);
        }
        std::vector<IterVar> axes{rc};
        axes.insert(axes.end(), rk.begin(), rk.end());
        Expr x = c.raw.defined() ? read_as(p, pidx, c.acc) : p(pidx);
        return sum(x * c.weight(v[1], rc, k), axes);
      },
      c.name + "_direct", "conv_direct", names);
  return epilogue(c, [&](const std::vector<Var>& v) { return r(as_exprs(v)); });
}

// How many output positions one image and channel has (the product of the spatial extents).
Expr output_positions(const ConvCore& c) {
  Expr positions = 1;
  for (const Expr& o : c.out) positions = positions * o;
  return arith::simplify(positions);
}

// The flattened spatial position of output coordinates v[2..] (what pointwise products index).
Expr flat_position(const ConvCore& c, const std::vector<Var>& v) {
  return flat_index(std::vector<Expr>(v.begin() + 2, v.end()), c.out);
}

// The input position a 1x1 convolution reads for output coordinates `o`: with a stride, every
// stride-th one (the packed panels gather them, so the product's tiles still read contiguous
// memory, where a blocked convolution would read strided: benchmarks/NOTES.md, "Strided 1x1").
std::vector<Expr> strided(const ConvCore& c, std::vector<Expr> o) {
  for (size_t d = 0; d < o.size(); ++d)
    if (c.strides[d] != 1) o[d] = o[d] * Expr(c.strides[d]);
  return o;
}

// A 1x1, unpadded convolution is W [M, C] @ X[n] [C, spatial]: the matrix product's core packs
// X into column panels, so its tiles read contiguous memory however far apart the channel planes
// lie; the epilogue reads the product at the flattened spatial position.
Tensor pointwise(const ConvCore& c) {
  Expr positions = output_positions(c);
  std::vector<Expr> out = c.out;
  auto coords = [out](const Expr& p) { return unflat_index(p, out); };
  MatmulCore mc;
  mc.batch = {c.n};
  mc.m = c.m, mc.n = positions, mc.k = c.c;
  mc.acc = c.acc;
  mc.registers = c.registers;
  mc.a = [&c](const std::vector<Expr>&, const Expr& m, const Expr& k) {
    std::vector<Expr> origin(c.kernel.size(), Expr(0));
    if (!c.prepacked) return c.weight(m, k, origin);
    // Packed as Wp[m / mr, c, 1.., m % mr]: a row tile's weights are one contiguous stream.
    Expr mr(matmul_tile_rows(c.m, c.registers));
    std::vector<Expr> idx{floordiv(m, mr), k};
    idx.insert(idx.end(), origin.begin(), origin.end());
    idx.push_back(floormod(m, mr));
    return c.packed_weight(idx);
  };
  mc.b = [&c, coords](const std::vector<Expr>& batch, const Expr& p, const Expr& k) {
    return c.input(batch[0], k, strided(c, coords(p)));
  };
  mc.b_batch = {c.n};
  mc.b_batch_of = [](const std::vector<Expr>& batch) { return batch; };
  Tensor r = matmul_core(mc, c.name + "_pointwise");
  Tensor padded = input_tensors(r)[0];
  return epilogue(c, [&](const std::vector<Var>& v) { return padded({v[0], v[1], flat_position(c, v)}); });
}

// With few positions (7x7, 14x14) the product above pads them to whole column panels (49 to 64).
// Transposed, X[n]^T [spatial, C] @ W^T [C, M], positions are the rows (tiles of 7 or 8) and
// output channels the columns, whose panels are the weight packed ahead of time
// (conv_pack_weight with a block of nr, read as Bp[m / nr, c, m % nr]); the epilogue stores
// each output channel's run of positions.
Tensor pointwise_rows(const ConvCore& c) {
  Expr positions = output_positions(c);
  std::vector<Expr> out = c.out;
  int64_t nr = matmul_tile_cols(c.acc, c.m, c.registers);
  Tensor w = c.packed_weight;
  std::vector<Expr> panel_shape{Expr((c.m + nr - 1) / nr), Expr(c.c), Expr(nr)};
  Tensor panels = compute(panel_shape,
                          [&](const std::vector<Var>& v) {
                            std::vector<Expr> idx{v[0], v[1]};
                            for (size_t d = 0; d < out.size(); ++d) idx.push_back(Expr(0));
                            idx.push_back(v[2]);
                            return w(idx);
                          },
                          c.name + "_panels", "conv_weight_panels", {"jo", "k", "ji"});
  MatmulCore mc;
  mc.batch = {c.n};
  mc.m = positions, mc.n = c.m, mc.k = c.c;
  mc.acc = c.acc;
  mc.registers = c.registers;
  mc.a = [&c, out](const std::vector<Expr>& batch, const Expr& p, const Expr& k) {
    return c.input(batch[0], k, strided(c, unflat_index(p, out)));
  };
  mc.b_batch_of = [](const std::vector<Expr>&) { return std::vector<Expr>{}; };
  mc.packed_b = panels;
  Tensor r = matmul_core(mc, c.name + "_pointwise");
  Tensor padded = input_tensors(r)[0];
  return epilogue(c, [&](const std::vector<Var>& v) { return padded({v[0], flat_position(c, v), v[1]}); });
}

// Whether a pointwise convolution with its weight packed ahead costs less with positions as rows:
// it pads them less, but its epilogue gathers each channel's positions from the tile, which
// costs about 14 multiply-adds per output (at 14x14 positions and 96 input channels, 196 rows
// instead of 224 columns save about what the gathers cost).
bool positions_as_rows(const ConvCore& c, int64_t positions) {
  auto round_up = [](int64_t x, int64_t to) { return (x + to - 1) / to * to; };
  int64_t as_columns = round_up(c.m, matmul_tile_rows(c.m, c.registers)) *
                       round_up(positions, matmul_tile_cols(c.acc, positions, c.registers));
  int64_t as_rows = round_up(positions, matmul_tile_rows(positions, c.registers)) *
                    round_up(c.m, matmul_tile_cols(c.acc, c.m, c.registers));
  return as_rows * (c.c + 14) < as_columns * c.c;
}

// The form a convolution takes (see the top of the file), and for the blocked and strip ones
// their block of output channels.
struct ConvForm {
  enum Kind { Pointwise, PointwiseRows, Depthwise, Strip, Winograd, Blocked, Direct } kind;
  int64_t block = 0;
};

ConvForm conv_form(const ConvCore& c) {
  int64_t lanes = c.registers.lanes(c.acc);
  int64_t cg = c.c / c.groups, mg = c.m / c.groups;
  if (c.registers.is_scalar_device() && !c.prepacked) return {c.groups > 1 && cg == 1 ? ConvForm::Depthwise : ConvForm::Direct};
  // Symbolic sizes choose at their hints, which AlterOpLayout (packing the weight for the form)
  // and lowering share (driver/build.cc); positions as rows only at constant sizes.
  int64_t volume = 1, positions = size_hint(output_positions(c));
  for (int64_t k : c.kernel) volume *= k;
  if (c.unpadded && c.groups == 1 && volume == 1 && c.m >= 8 && positions >= lanes)
    return {c.prepacked && static_space(c) && positions_as_rows(c, positions) ? ConvForm::PointwiseRows
                                                                              : ConvForm::Pointwise};
  if (c.groups > 1 && cg == 1) return {ConvForm::Depthwise};
  const int64_t strip = strip_block(c.registers);
  if (c.groups == 1 && c.c <= kMaxStripChannels && c.m >= strip / 2 && size_hint(c.out.back()) >= lanes &&
      c.strides.back() <= 4 && c.acc == runtime::kFloat32)
    return {ConvForm::Strip, strip};
  if (winograd_applies(c)) return {ConvForm::Winograd};
  if (mg % (2 * lanes) == 0) return {ConvForm::Blocked, 2 * lanes};
  if (mg % lanes == 0 || (c.groups == 1 && c.m >= lanes))
    return {ConvForm::Blocked, c.groups == 1 && c.m >= 2 * lanes ? 2 * lanes : lanes};
  return {ConvForm::Direct};
}

// The shape of the weight a convolution of form `form` reads packed ahead of time (empty: it
// reads the weight as it is).
std::vector<int64_t> packed_shape(const ConvCore& c, const ConvForm& form, const std::vector<int64_t>& weight) {
  if (form.kind == ConvForm::Winograd) return winograd_weight_shape(c);
  if (form.kind == ConvForm::Blocked || form.kind == ConvForm::Strip)
    return conv_packed_weight_shape(weight, form.block);
  if (form.kind == ConvForm::Pointwise) return conv_packed_weight_shape(weight, matmul_tile_rows(c.m, c.registers));
  if (form.kind == ConvForm::PointwiseRows)
    return conv_packed_weight_shape(weight, matmul_tile_cols(c.acc, c.m, c.registers));
  return {};
}

Tensor conv_core(const ConvCore& c) {
  ConvForm form = conv_form(c);
  switch (form.kind) {
    case ConvForm::Pointwise:
      return pointwise(c);
    case ConvForm::PointwiseRows:
      return pointwise_rows(c);
    case ConvForm::Depthwise:
      return depthwise(c);
    case ConvForm::Strip:
      return strip(c, form.block);
    case ConvForm::Winograd:
      return winograd(c);
    case ConvForm::Blocked:
      return blocked(c, form.block);
    default:
      return direct(c);
  }
}

// The sizes of a forward convolution of data `ds` with a weight `ws` (what picks its form).
ConvCore forward_sizes(const std::string& name, const std::vector<Expr>& ds, const std::vector<int64_t>& ws,
                       const ConvGeometry& g, DataType acc, const Registers& regs) {
  std::vector<Expr> out = conv_shape(ds, ws, g);
  ConvCore c;
  c.name = name;
  c.n = ds[0], c.c = *as_const_int(ds[1]), c.m = ws[0], c.groups = g.groups;
  c.kernel.assign(ws.begin() + 2, ws.end());
  c.strides = g.strides, c.dilations = g.dilations;
  c.in.assign(ds.begin() + 2, ds.end());
  c.out.assign(out.begin() + 2, out.end());
  c.acc = acc;
  c.registers = regs;
  c.unpadded = std::all_of(g.pads.begin(), g.pads.end(), [](int64_t p) { return p == 0; });
  return c;
}

// `ws`: the weight's shape as the convolution sees it, [M, C / groups, kernel...].
ConvCore forward_core(const std::string& name, const Tensor& data, const Tensor& weight, const std::vector<int64_t>& ws,
                      const ConvGeometry& g, DataType acc, const Tensor& data_zero, const Tensor& weight_zero,
                      const Registers& regs) {
  ConvCore c = forward_sizes(name, dims_per_image(data), ws, g, acc, regs);
  c.n = data->shape[0];
  size_t rank = c.in.size();
  if (c.unpadded && acc == data.dtype() && !data_zero.defined()) c.raw = data;
  c.source = [data, data_zero, in = c.in, g, acc, rank](const Expr& n, const Expr& ch, const std::vector<Expr>& pos) {
    std::vector<Expr> idx{n, ch};
    Expr inside = const_true();
    for (size_t d = 0; d < rank; ++d) {
      Expr x = pos[d] - Expr(g.pads[d]);
      inside = logical_and(inside, logical_and(x >= Expr(0), x < in[d]));
      idx.push_back(x);
    }
    // The select is lazy: outside the input nothing is read (a masked load in vectors), so the
    // index needs no clamping, which would turn contiguous loads into gathers.
    Expr v = read_as(data, idx, acc) - zero_point(data_zero, Expr(0), acc);
    return select(inside, v, make_zero(acc));
  };
  c.input = [data, data_zero, acc](const Expr& n, const Expr& ch, const std::vector<Expr>& pos) {
    std::vector<Expr> idx{n, ch};
    idx.insert(idx.end(), pos.begin(), pos.end());
    return read_as(data, idx, acc) - zero_point(data_zero, Expr(0), acc);
  };
  c.weight = [weight, weight_zero, acc](const Expr& m, const Expr& ch, const std::vector<Expr>& k) {
    std::vector<Expr> idx{m, ch};
    idx.insert(idx.end(), k.begin(), k.end());
    return read_as(weight, idx, acc) - zero_point(weight_zero, m, acc);
  };
  return c;
}

}  // namespace

int64_t depthwise_row_block(int64_t rows) { return rows < 4 ? rows : 4; }

int64_t conv_tile_width(int64_t width, int64_t vectors, const Registers& regs) {
  // Rows x vectors accumulators must leave registers for the weights and a broadcast input:
  // at most three quarters of them (24 of AVX-512's 32). The tile that pads the width least
  // wins; then the wider one.
  int64_t most = std::max<int64_t>(1, std::min<int64_t>(regs.count * 3 / 4 / vectors, 12));
  if (width <= most) return width;
  int64_t best = most, waste = (width + most - 1) / most * most - width;
  for (int64_t t = most - 1; t >= std::min<int64_t>(4, most); --t) {
    int64_t w = (width + t - 1) / t * t - width;
    if (w < waste) best = t, waste = w;
  }
  return best;
}

std::vector<Expr> conv_shape(const std::vector<Expr>& data, const std::vector<int64_t>& weight, const ConvGeometry& g) {
  if (data.size() < 3) fail("conv: data must be [N, C, spatial...], got ", shape_str(data));
  if (weight.size() != data.size())
    fail("conv: weight ", runtime::shape_str(weight), " must have the rank of data ", shape_str(data));
  size_t rank = data.size() - 2;
  check_geometry("conv", rank, g);
  const int64_t channels = constant_channels("conv", data[1], weight[1] * g.groups, weight, data);
  if (channels % g.groups != 0 || weight[0] % g.groups != 0)
    fail("conv: channels (", channels, " in, ", weight[0], " out) must be divisible by groups ", g.groups);
  if (weight[1] * g.groups != channels)
    fail("conv: weight ", runtime::shape_str(weight), " expects ", weight[1] * g.groups, " input channels (", weight[1],
         " per group x ", g.groups, " groups), data has ", channels);
  std::vector<Expr> out{data[0], Expr(weight[0])};
  for (size_t d = 0; d < rank; ++d) {
    int64_t window = (weight[2 + d] - 1) * g.dilations[d] + 1;
    Expr span = arith::simplify(data[2 + d] + Expr(g.pads[d] + g.pads[d + rank] - window));
    // A symbolic size too small for the window gives an output size below 1, which the plan
    // checks at each call (OpDef::nonempty_dims).
    const int64_t* fixed = as_const_int(span);
    if (fixed && *fixed < 0)
      fail("conv: the kernel (", window, " with dilation) is larger than the padded input (", *fixed + window,
           ") in spatial dimension ", d);
    out.push_back(arith::simplify(floordiv(span, Expr(g.strides[d])) + Expr(1)));
  }
  return out;
}

std::vector<int64_t> conv_shape(const std::vector<int64_t>& data, const std::vector<int64_t>& weight,
                                const ConvGeometry& g) {
  return const_dims(conv_shape(shape_exprs(data), weight, g));
}

std::vector<int64_t> conv_packed_weight_shape(const std::vector<int64_t>& weight, int64_t block) {
  if (weight.size() < 3 || block < 1)
    fail("conv_pack_weight: weight must be [M, C / groups, kernel...] and block positive, got ",
         runtime::shape_str(weight), " and ", block);
  std::vector<int64_t> packed{(weight[0] + block - 1) / block};
  packed.insert(packed.end(), weight.begin() + 1, weight.end());
  packed.push_back(block);
  return packed;
}

ConvWeightPacking conv_weight_packing(const std::vector<Expr>& data, const std::vector<int64_t>& weight,
                                      const ConvGeometry& g, DataType dtype, const Registers& regs) {
  ConvCore c = forward_sizes("conv", data, weight, g, accumulation_type(dtype), regs);
  c.prepacked = true;
  if (winograd_fits(c) && !as_const_int(winograd_pays(c))) {
    ConvCore direct = c;
    direct.winograd_weight = false;
    ConvForm other = conv_form(direct);
    if (other.kind == ConvForm::Blocked) return {ConvWeightPacking::Winograd, other.block, true};
  }
  ConvForm form = conv_form(c);
  if (form.kind == ConvForm::Winograd) return {ConvWeightPacking::Winograd};
  if (form.kind == ConvForm::Blocked || form.kind == ConvForm::Strip) return {ConvWeightPacking::Blocked, form.block};
  if (form.kind == ConvForm::Pointwise) return {ConvWeightPacking::Blocked, matmul_tile_rows(c.m, c.registers)};
  if (form.kind == ConvForm::PointwiseRows)
    return {ConvWeightPacking::Blocked, matmul_tile_cols(c.acc, c.m, c.registers)};
  return {};
}

Expr conv_winograd_condition(const std::vector<Expr>& data, const std::vector<int64_t>& weight, const ConvGeometry& g,
                             DataType dtype, const Registers& regs) {
  ConvCore c = forward_sizes("conv", data, weight, g, accumulation_type(dtype), regs);
  c.prepacked = true;
  return winograd_fits(c) ? winograd_pays(c) : make_const(runtime::kBool, 0);
}

std::vector<int64_t> conv_unpacked_weight_shape(const std::vector<Expr>& data, const std::vector<int64_t>& packed,
                                                int64_t channels, const ConvGeometry& g, DataType dtype,
                                                const Registers& regs) {
  // The two packings tell their source's shape differently: blocks keep [C / groups, kernel..]
  // between the block count and the block; Winograd panels [36, blocks, C, columns] are 3x3 only.
  std::vector<int64_t> blocked{channels}, winograd{channels, packed.size() == 4 ? packed[2] : 0, 3, 3};
  if (packed.size() == data.size() + 1) blocked.insert(blocked.end(), packed.begin() + 1, packed.end() - 1);
  for (const std::vector<int64_t>* reading : {&blocked, &winograd}) {
    const std::vector<int64_t>& ws = *reading;
    if (ws.size() != data.size() || ws[1] < 1) continue;
    try {
      ConvCore c = forward_sizes("conv", data, ws, g, accumulation_type(dtype), regs);
      c.prepacked = true;
      c.winograd_weight = reading == &winograd;
      std::vector<int64_t> want = packed_shape(c, conv_form(c), ws);
      if (want == packed) return ws;
    } catch (const Error&) {
      // Not a weight this data can be convolved with: the other reading may still be.
    }
  }
  std::vector<int64_t> ws = blocked.size() == data.size() ? blocked : winograd;
  ConvWeightPacking how = conv_weight_packing(data, ws, g, dtype, regs);
  std::string reads = how.kind == ConvWeightPacking::Winograd
                          ? "conv_winograd_weight of a " + runtime::shape_str(winograd) + " weight gives " +
                                runtime::shape_str(conv_winograd_weight_shape(winograd, regs))
                      : how.kind == ConvWeightPacking::Blocked
                          ? "conv_pack_weight(block=" + std::to_string(how.block) + ") of a " + runtime::shape_str(ws) +
                                " weight gives " + runtime::shape_str(conv_packed_weight_shape(ws, how.block))
                          : "it reads its weight unpacked: packed_channels must be 0";
  throw WeightPackedForAnotherForm("conv: weight " + runtime::shape_str(packed) +
                                   " is not the packing of a weight with " + std::to_string(channels) +
                                   " output channels that this convolution of data " + shape_str(data) + " reads for " +
                                   std::to_string(regs.vector_bytes) + "-byte vector registers (" + reads + ")");
}

Tensor conv_pack_weight(const Tensor& weight, int64_t block) {
  std::vector<int64_t> ws = weight->dims();
  conv_packed_weight_shape(ws, block);  // checks the arguments
  ConvCore c;
  c.name = "conv";
  c.m = ws[0], c.c = ws[1];
  c.kernel.assign(ws.begin() + 2, ws.end());
  c.acc = accumulation_type(weight.dtype());
  DataType acc = c.acc;
  c.weight = [weight, acc](const Expr& m, const Expr& ch, const std::vector<Expr>& k) {
    std::vector<Expr> idx{m, ch};
    idx.insert(idx.end(), k.begin(), k.end());
    return read_as(weight, idx, acc);
  };
  return pack_weight(c, block);
}

Tensor conv_winograd_weight(const Tensor& weight, const Registers& regs) {
  std::vector<int64_t> ws = weight->dims();
  if (ws.size() != 4 || ws[2] != 3 || ws[3] != 3 || accumulation_type(weight.dtype()) != runtime::kFloat32)
    fail("conv_winograd_weight: the weight must be float [M, C, 3, 3], got ", weight.dtype().str(),
         runtime::shape_str(ws));
  ConvCore c;
  c.name = "conv";
  c.m = ws[0], c.c = ws[1];
  c.acc = runtime::kFloat32;
  c.registers = regs;
  c.weight = [weight](const Expr& m, const Expr& ch, const std::vector<Expr>& k) {
    return read_as(weight, {m, ch, k[0], k[1]}, runtime::kFloat32);
  };
  return winograd_weight(c);
}

std::vector<int64_t> conv_winograd_weight_shape(const std::vector<int64_t>& weight, const Registers& regs) {
  if (weight.size() != 4 || weight[2] != 3 || weight[3] != 3)
    fail("conv_winograd_weight: the weight must be [M, C, 3, 3], got ", runtime::shape_str(weight));
  ConvCore c;
  c.m = weight[0], c.c = weight[1];
  c.acc = runtime::kFloat32;
  c.registers = regs;
  return winograd_weight_shape(c);
}

Tensor conv(const Tensor& data, const Tensor& weight, const Tensor& bias, const ConvGeometry& g, const Registers& regs,
            int64_t packed_channels, const Tensor& direct_weight) {
  DataType acc = accumulation_type(data.dtype());
  if (packed_channels == 0) {
    if (data.dtype() != weight.dtype())
      fail("conv: data and weight dtypes differ: ", data.dtype().str(), " vs ", weight.dtype().str());
    ConvCore c = forward_core("conv", data, weight, weight->dims(), g, acc, Tensor(), Tensor(), regs);
    c.out_type = data.dtype();
    c.bias = bias;
    return conv_core(c);
  }
  // A weight packed ahead of time in the layout this convolution's form reads.
  if (weight.dtype() != acc) fail("conv: a packed weight must be ", acc.str(), ", got ", weight.dtype().str());
  std::vector<int64_t> ws =
      conv_unpacked_weight_shape(dims_per_image(data), weight->dims(), packed_channels, g, data.dtype(), regs);
  ConvCore c = forward_core("conv", data, weight, ws, g, acc, Tensor(), Tensor(), regs);
  // The packed forms read it as it is, so c.weight, which reads the unpacked layout, is never used.
  c.packed_weight = weight;
  c.prepacked = true;
  c.winograd_weight = weight.ndim() == 4 && ws.size() == 4;  // panels [36, M / nr, C, nr], not blocks
  if (direct_weight.defined()) {
    if (!*c.winograd_weight || direct_weight.dtype() != acc ||
        conv_unpacked_weight_shape(dims_per_image(data), direct_weight->dims(), packed_channels, g, data.dtype(),
                                   regs) != ws)
      fail("conv: a direct weight ", direct_weight.dtype().str(), runtime::shape_str(direct_weight->dims()),
           " goes beside a Winograd packing of the same weight, got ", weight.dtype().str(),
           runtime::shape_str(weight->dims()));
    c.winograd_weight.reset();
    c.winograd_weight = winograd_applies(c);
    if (!*c.winograd_weight) c.packed_weight = direct_weight;
  }
  c.out_type = data.dtype();
  c.bias = bias;
  return conv_core(c);
}

Tensor conv_integer(const Tensor& data, const Tensor& weight, const Tensor& data_zero, const Tensor& weight_zero,
                    const ConvGeometry& g, const Registers& regs) {
  ConvCore c =
      forward_core("conv_integer", data, weight, weight->dims(), g, runtime::kInt32, data_zero, weight_zero, regs);
  c.raw = Tensor();  // zero points are subtracted in the padded stage
  c.out_type = runtime::kInt32;
  return conv_core(c);
}

Tensor qlinear_conv(const Tensor& data, const Tensor& data_scale, const Tensor& data_zero, const Tensor& weight,
                    const Tensor& weight_scale, const Tensor& weight_zero, const Tensor& y_scale, const Tensor& y_zero,
                    const Tensor& bias, const ConvGeometry& g, const Registers& regs) {
  ConvCore c =
      forward_core("qlinear_conv", data, weight, weight->dims(), g, runtime::kInt32, data_zero, weight_zero, regs);
  c.raw = Tensor();
  c.out_type = y_zero.dtype();
  c.bias = bias;
  c.finish = [&](const Expr& value, const std::vector<Var>& v) {
    Expr multiplier = zero_point(data_scale, Expr(0), runtime::kFloat32) *
                      zero_point(weight_scale, v[1], runtime::kFloat32) /
                      zero_point(y_scale, Expr(0), runtime::kFloat32);
    return requantize(value, multiplier, zero_point(y_zero, Expr(0), runtime::kInt32), c.out_type);
  };
  return conv_core(c);
}

std::vector<Expr> conv_transpose_shape(const std::vector<Expr>& data, const std::vector<int64_t>& weight,
                                       const ConvGeometry& g) {
  if (data.size() < 3) fail("conv_transpose: data must be [N, C, spatial...], got ", shape_str(data));
  if (weight.size() != data.size())
    fail("conv_transpose: weight ", runtime::shape_str(weight), " must have the rank of data ", shape_str(data));
  size_t rank = data.size() - 2;
  check_geometry("conv_transpose", rank, g);
  if (g.output_padding.size() != rank) fail("conv_transpose: output_padding must have ", rank, " entries");
  const int64_t channels = constant_channels("conv_transpose", data[1], weight[0], weight, data);
  if (weight[0] != channels)
    fail("conv_transpose: weight ", runtime::shape_str(weight), " expects ", weight[0], " input channels, data has ",
         channels);
  if (channels % g.groups != 0)
    fail("conv_transpose: input channels ", channels, " must be divisible by groups ", g.groups);
  std::vector<Expr> out{data[0], Expr(weight[1] * g.groups)};
  for (size_t d = 0; d < rank; ++d) {
    if (g.output_padding[d] < 0) fail("conv_transpose: output_padding must not be negative");
    // stride * (in - 1) + output_padding + dilated kernel - pads; a symbolic size below 1 gives
    // the least output, which must still be positive.
    const int64_t rest = g.output_padding[d] + (weight[2 + d] - 1) * g.dilations[d] + 1 - g.pads[d] - g.pads[d + rank];
    Expr o = arith::simplify(Expr(g.strides[d]) * (data[2 + d] - Expr(1)) + Expr(rest));
    const int64_t* fixed = as_const_int(o);
    if ((fixed && *fixed < 1) || (!fixed && rest < 1))
      fail("conv_transpose: pads leave no output in spatial dimension ", d);
    out.push_back(o);
  }
  return out;
}

std::vector<int64_t> conv_transpose_shape(const std::vector<int64_t>& data, const std::vector<int64_t>& weight,
                                          const ConvGeometry& g) {
  return const_dims(conv_transpose_shape(shape_exprs(data), weight, g));
}

// A transposed convolution is a stride-1 convolution of the input with zeros inserted between
// elements (stride - 1 of them), padded by dilation * (kernel - 1) - pad, with the kernel
// flipped and its channel axes swapped.
Tensor conv_transpose(const Tensor& data, const Tensor& weight, const Tensor& bias, const ConvGeometry& g,
                      const Registers& regs) {
  if (data.dtype() != weight.dtype())
    fail("conv_transpose: data and weight dtypes differ: ", data.dtype().str(), " vs ", weight.dtype().str());
  const std::vector<Expr> ds = data->shape;
  const std::vector<int64_t> ws = weight->dims();
  std::vector<Expr> out = conv_transpose_shape(ds, ws, g);
  size_t rank = ds.size() - 2;
  DataType acc = accumulation_type(data.dtype());
  ConvCore c;
  c.name = "conv_transpose";
  c.n = ds[0], c.c = *as_const_int(ds[1]), c.m = *as_const_int(out[1]), c.groups = g.groups;
  c.kernel.assign(ws.begin() + 2, ws.end());
  c.strides.assign(rank, 1);
  c.dilations = g.dilations;
  c.out.assign(out.begin() + 2, out.end());
  c.acc = acc;
  c.registers = regs;
  c.out_type = data.dtype();
  c.bias = bias;
  std::vector<int64_t> front(rank);
  for (size_t d = 0; d < rank; ++d) front[d] = (c.kernel[d] - 1) * g.dilations[d] - g.pads[d];
  c.source = [data, ds, g, acc, rank, front](const Expr& n, const Expr& ch, const std::vector<Expr>& pos) {
    std::vector<Expr> idx{n, ch};
    Expr inside = const_true();
    for (size_t d = 0; d < rank; ++d) {
      Expr x = pos[d] - Expr(front[d]);  // position in the zero-inserted input
      Expr s(g.strides[d]);
      const Expr last = arith::simplify(ds[2 + d] - Expr(1));
      inside = logical_and(inside, logical_and(x >= Expr(0), x <= arith::simplify(last * s)));
      if (g.strides[d] > 1) inside = logical_and(inside, floormod(x, s) == Expr(0));
      idx.push_back(max(min(floordiv(x, s), last), Expr(0)));
    }
    return select(inside, read_as(data, idx, acc), make_zero(acc));
  };
  int64_t cg = c.c / c.groups, mg = c.m / c.groups;
  std::vector<int64_t> kernel = c.kernel;
  c.weight = [weight, acc, cg, mg, kernel](const Expr& m, const Expr& ch, const std::vector<Expr>& k) {
    std::vector<Expr> idx{floordiv(m, Expr(mg)) * Expr(cg) + ch, floormod(m, Expr(mg))};
    for (size_t d = 0; d < k.size(); ++d) idx.push_back(Expr(kernel[d] - 1) - k[d]);
    return read_as(weight, idx, acc);
  };
  return conv_core(c);
}

}  // namespace tessera::tensor_ir::ops
