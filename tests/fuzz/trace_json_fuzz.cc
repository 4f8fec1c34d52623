// Schedule traces as tuning records hold them: JSON read back, written again, printed as code and
// replayed on a small matmul, the way a build replays a record from the database.
#include "fuzz_input.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "tensor_ir/op.h"

namespace {

using namespace tessera;
using namespace tessera::tensor_ir;

void replay_on_matmul(const schedule::Trace& trace) {
  Tensor a = placeholder({Expr(int64_t(12)), Expr(int64_t(8))}, runtime::kFloat32, "A");
  Tensor b = placeholder({Expr(int64_t(8)), Expr(int64_t(10))}, runtime::kFloat32, "B");
  IterVar k = reduce_axis(Range(Expr(int64_t(0)), Expr(int64_t(8))), "k");
  Tensor c = compute(
      {Expr(int64_t(12)), Expr(int64_t(10))},
      [&](const std::vector<Var>& i) { return sum(a(i[0], k) * b(k, i[1]), {k}); }, "C");
  schedule::Schedule s({c});
  trace.apply(s);
  schedule::lower(s, {a, b, c}, "kernel");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_only_errors([&] {
    schedule::Trace trace = schedule::Trace::from_json(fuzz::as_string(data, size));
    const std::string json = trace.to_json();
    if (!(schedule::Trace::from_json(json) == trace)) fuzz::finding("a trace reads back differently: " + json);
    trace.to_code();
    replay_on_matmul(trace);
  });
  return 0;
}
