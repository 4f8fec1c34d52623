// The Winograd form of 3x3, stride-1 convolutions: F(4x4, 3x3) (Lavin and Gray, 2016) computes a
// 4x4 tile of outputs from a 6x6 tile of input with 36 multiplications per channel pair instead
// of 144. Per tile b and input channel c the input tile d is transformed, V = B^T d B; per
// channel pair the kernel g, U = G g G^T; the 36 positions xi of the transformed tiles are then
// 36 independent matrix products over channels, M[xi] = V[xi] @ U[xi] ([tiles, C] @ [C, M]),
// and each output tile is A^T M A. The stages:
//  * Pw[n, y, x, c] (tag "winograd_pad"): the padded input, channels innermost, padded to whole
//    tiles, so the transforms read vectors of channels;
//  * V[xi, b, c] (tag "winograd_input");
//  * the products through the matrix-product core (tags "matmul_prepacked", "matmul",
//    "matmul_epilogue"), reading U's panels packed ahead of time (winograd_weight, by the graph's
//    AlterOpLayout; a convolution whose weight is not known at compile time takes another form);
//  * Z[b, i, j, m] (tag "winograd_output"): the output tiles, channels innermost;
//  * the epilogue (tag "conv_epilogue") reads Z at its tile, adds the bias and drops the padding.
// Each transform is one expression per position of its tile, selected by the position (the
// template unrolls those loops, so the selection folds away) and written out without the zero
// coefficients, which are most of them.
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_conv_core.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/ops/nn_util.h"
#include "tensor_ir/size_hint.h"

namespace tessera::tensor_ir::ops::nn_detail {

namespace {

constexpr int kTile = 4;   // outputs per tile side
constexpr int kAlpha = 6;  // inputs per tile side: kTile + 3 - 1
constexpr int kPositions = kAlpha * kAlpha;
// Below this many tiles per image the transforms and the padding to whole tiles cost more than
// the multiplications saved, except for the few-tile outputs below.
constexpr int64_t kMinTiles = 9;
// Outputs of 2x2 tiles per image (7x7, ResNet's last stage, padded to 8x8) pay too where the
// padding wastes at most a quarter of the tiles' outputs and the channels outweigh the transforms;
// fewer tiles (a 4x4 output is one) leave products of a row or two per image reading a weight 4
// times the direct one's. With 16-lane vectors (AVX-512) the direct form's arithmetic is fast
// enough that such a product pays only from kMinTiles rows (tiles over the batch): a batch of 3
// at 7x7 (benchmarks/NOTES.md, "Winograd on 7x7 outputs").
constexpr int64_t kMinFewTiles = 4;
constexpr int64_t kMinFewTilesChannels = 64;
constexpr int64_t kWideVectorLanes = 16;

// Interpolation points 0, 1, -1, 2, -2 and infinity.
constexpr double kBT[kAlpha][kAlpha] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                        {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr double kG[kAlpha][3] = {{1.0 / 4, 0, 0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
constexpr double kAT[kTile][kAlpha] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

struct Tiles {
  Expr rows, cols;  // per image, symbolic with the image's sizes
  Expr per_image() const { return arith::simplify(rows * cols); }
};

Tiles tiles_of(const ConvCore& c) { return {ceil_div(c.out[0], kTile), ceil_div(c.out[1], kTile)}; }

// sum of weight * term over the nonzero weights; +-1 without a multiplication.
Expr combine(const std::vector<std::pair<double, Expr>>& terms, DataType t) {
  Expr sum;
  for (const auto& [w, x] : terms) {
    if (w == 0) continue;
    if (!sum.defined()) sum = w == 1 ? x : make_const(t, w) * x;
    else if (w == 1 || w == -1) sum = w == 1 ? sum + x : sum - x;
    else sum = sum + make_const(t, w) * x;
  }
  return sum.defined() ? sum : make_zero(t);
}

// branches[index]; `index` runs over 0 .. branches.size() - 1.
Expr select_by(const Expr& index, const std::vector<Expr>& branches) {
  Expr chain = branches.back();
  for (size_t i = branches.size() - 1; i-- > 0;)
    chain = select(index == Expr(static_cast<int64_t>(i)), branches[i], chain);
  return chain;
}

// U[xi, c, m] = (G g G^T)[xi / 6, xi % 6] for the kernel g of output channel m, input channel c.
Expr transformed_weight(const ConvCore& c, const Expr& xi, const Expr& m, const Expr& ch) {
  std::vector<Expr> branches;
  for (int e = 0; e < kAlpha; ++e)
    for (int f = 0; f < kAlpha; ++f) {
      std::vector<std::pair<double, Expr>> terms;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
          if (kG[e][a] != 0 && kG[f][b] != 0)
            terms.push_back({kG[e][a] * kG[f][b], c.weight(m, ch, {Expr(a), Expr(b)})});
      branches.push_back(combine(terms, c.acc));
    }
  return select_by(xi, branches);
}

}  // namespace

bool winograd_fits(const ConvCore& c) {
  const std::vector<int64_t> three{3, 3}, one{1, 1};
  return c.prepacked && c.acc == runtime::kFloat32 && !c.finish && c.out.size() == 2 && c.groups == 1 &&
         c.kernel == three && c.strides == one && c.dilations == one && c.c >= 8 && c.m >= 16;
}

Expr winograd_pays(const ConvCore& c) {
  const Expr tiles = tiles_of(c).per_image();
  Expr pays = tiles >= Expr(kMinTiles);
  if (std::min(c.c, c.m) >= kMinFewTilesChannels) {
    const Expr outputs = c.out[0] * c.out[1];
    Expr few = logical_and(tiles >= Expr(kMinFewTiles), Expr(4) * outputs >= Expr(3 * kTile * kTile) * tiles);
    if (c.registers.lanes(c.acc) >= kWideVectorLanes) few = logical_and(few, c.n * tiles >= Expr(kMinTiles));
    pays = logical_or(pays, few);
  }
  return arith::simplify(pays);
}

bool winograd_applies(const ConvCore& c) {
  if (!winograd_fits(c)) return false;
  if (c.winograd_weight) return *c.winograd_weight;
  return size_hint(winograd_pays(c)) != 0;
}

std::vector<int64_t> winograd_weight_shape(const ConvCore& c) {
  int64_t nr = matmul_tile_cols(c.acc, c.m, c.registers);
  return {kPositions, (c.m + nr - 1) / nr, c.c, nr};
}

Tensor winograd_weight(const ConvCore& c) {
  int64_t nr = matmul_tile_cols(c.acc, c.m, c.registers), m = c.m;
  std::vector<Expr> shape = shape_exprs(winograd_weight_shape(c));
  // The matrix-product core's panels of U [xi, c, m]: Up[xi, m / nr, c, m % nr], zeros past M.
  return compute(shape,
                 [&](const std::vector<Var>& v) {
                   Expr j = v[1] * Expr(nr) + v[3];
                   return select(j < Expr(m), transformed_weight(c, v[0], j, v[2]), make_zero(c.acc));
                 },
                 c.name + "_winograd_weight", "conv_pack", {"xi", "jo", "c", "ji"});
}

Tensor winograd(const ConvCore& c) {
  if (!c.packed_weight.defined()) fail(c.name, ": the Winograd form reads its weight transformed ahead of time");
  Tiles tiles = tiles_of(c);
  const Expr per_image = tiles.per_image(), cols = tiles.cols;
  const Expr blocks = arith::simplify(c.n * per_image);  // the product's rows: every image's tiles
  Tensor pw = compute({Expr(c.n), arith::simplify(tiles.rows * Expr(kTile) + Expr(2)),
                       arith::simplify(cols * Expr(kTile) + Expr(2)), Expr(c.c)},
                      [&](const std::vector<Var>& v) {
                        return c.source(v[0], v[3], {v[1], v[2]});
                      },
                      c.name + "_winograd_pad", "winograd_pad", {"n", "y", "x", "c"});

  Tensor v =
      compute({Expr(kPositions), blocks, Expr(c.c)},
              [&](const std::vector<Var>& x) {
                Expr image = floordiv(x[1], per_image), tile = floormod(x[1], per_image);
                Expr y0 = floordiv(tile, cols) * Expr(kTile), x0 = floormod(tile, cols) * Expr(kTile);
                std::vector<Expr> branches;
                for (int e = 0; e < kAlpha; ++e)
                  for (int f = 0; f < kAlpha; ++f) {
                    std::vector<std::pair<double, Expr>> terms;
                    for (int i = 0; i < kAlpha; ++i)
                      for (int j = 0; j < kAlpha; ++j)
                        if (kBT[e][i] != 0 && kBT[f][j] != 0)
                          terms.push_back({kBT[e][i] * kBT[f][j], pw({image, y0 + Expr(i), x0 + Expr(j), x[2]})});
                    branches.push_back(combine(terms, c.acc));
                  }
                return select_by(x[0], branches);
              },
              c.name + "_winograd_input", "winograd_input", {"xi", "b", "c"});

  MatmulCore mc;
  mc.batch = {kPositions};
  mc.m = blocks, mc.n = c.m, mc.k = c.c;
  mc.acc = c.acc;
  mc.registers = c.registers;
  mc.a = [v](const std::vector<Expr>& batch, const Expr& b, const Expr& k) { return v({batch[0], b, k}); };
  mc.b_batch = {kPositions};
  mc.b_batch_of = [](const std::vector<Expr>& batch) { return batch; };
  mc.packed_b = c.packed_weight;
  Tensor product = matmul_core(mc, c.name + "_winograd_product");

  Tensor z = compute({blocks, Expr(kTile), Expr(kTile), Expr(c.m)},
                     [&](const std::vector<Var>& x) {
                       std::vector<Expr> branches;
                       for (int i = 0; i < kTile; ++i)
                         for (int j = 0; j < kTile; ++j) {
                           std::vector<std::pair<double, Expr>> terms;
                           for (int e = 0; e < kAlpha; ++e)
                             for (int f = 0; f < kAlpha; ++f)
                               if (kAT[i][e] != 0 && kAT[j][f] != 0)
                                 terms.push_back({kAT[i][e] * kAT[j][f], product({Expr(e * kAlpha + f), x[0], x[3]})});
                           branches.push_back(combine(terms, c.acc));
                         }
                       return select_by(x[1] * Expr(kTile) + x[2], branches);
                     },
                     c.name + "_winograd_output", "winograd_output", {"b", "i", "j", "m"});

  return epilogue(c, [&](const std::vector<Var>& x) {
    Expr b = x[0] * per_image + floordiv(x[2], Expr(kTile)) * cols + floordiv(x[3], Expr(kTile));
    return z({b, floormod(x[2], Expr(kTile)), floormod(x[3], Expr(kTile)), x[1]});
  });
}

}  // namespace tessera::tensor_ir::ops::nn_detail
