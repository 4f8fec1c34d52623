#include "runtime/module_metadata.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "runtime/error.h"
#include "runtime/program_builtins.h"

namespace tessera::runtime {

namespace {

using Info = GraphPlan::TensorInfo;

uint64_t align64(uint64_t n) { return (n + 63) / 64 * 64; }

uint64_t bytes_of(const std::vector<int64_t>& shape, DataType dtype) {
  uint64_t n = static_cast<uint64_t>(dtype.element_bytes());
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

// The deepest shape expression a module may hold (a corrupt one must not overflow the stack).
constexpr int kMaxShapeExprDepth = 32;

class Writer {
 public:
  explicit Writer(uint32_t version) : version_(version) {}
  template <typename T>
  void pod(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void u32(size_t v) { pod(static_cast<uint32_t>(v)); }
  void str(const std::string& s) {
    u32(s.size());
    out_ += s;
  }
  void shape(const std::vector<int64_t>& s) {
    u32(s.size());
    for (int64_t d : s) pod(d);
  }
  void ints(const std::vector<int>& v) {
    u32(v.size());
    for (int x : v) pod(static_cast<int32_t>(x));
  }
  // A dimension in prefix order: its operation, then a constant's value, a variable's name or
  // the two operands.
  void dim(const ShapeExpr& e) {
    pod(static_cast<uint8_t>(e.op()));
    if (e.is_constant()) return pod(e.constant());
    if (const std::string* name = e.var_name()) return str(*name);
    dim(e.lhs());
    dim(e.rhs());
  }
  // Version 3 on: a shape of expressions; before, constants only.
  void shape(const SymbolicShape& s, const std::string& what) {
    if (version_ < 3) return shape(static_shape(s, what + " (module format " + std::to_string(version_) + ")"));
    u32(s.size());
    for (const ShapeExpr& d : s) dim(d);
  }
  void strs(const std::vector<std::string>& v) {
    u32(v.size());
    for (const std::string& s : v) str(s);
  }
  void i64s(const std::vector<int64_t>& v) {
    u32(v.size());
    for (int64_t x : v) pod(x);
  }
  void buffers(const std::vector<BufferSpec>& specs) {
    u32(specs.size());
    for (const BufferSpec& a : specs) {
      str(a.name);
      shape(a.shape, "argument '" + a.name + "'");
      str(a.dtype.str());
    }
  }
  std::string take() { return std::move(out_); }

 private:
  uint32_t version_;
  std::string out_;
};

// Every read is bounds-checked; a count is checked against the bytes left before anything is
// allocated for it, so a corrupt count cannot ask for gigabytes.
class Reader {
 public:
  Reader(const char* data, size_t size, uint32_t version) : p_(data), end_(data + size), version_(version) {}

  template <typename T>
  T pod(const char* what) {
    T v;
    need(sizeof v, what);
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  size_t count(const char* what, size_t min_item_bytes) {
    uint32_t n = pod<uint32_t>(what);
    need(static_cast<size_t>(n) * min_item_bytes, what);
    return n;
  }
  std::string str(const char* what) {
    size_t n = count(what, 1);
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  DataType dtype(const char* what) {
    std::string name = str(what);
    try {
      return DataType::parse(name);
    } catch (const Error&) {
      bad(what, " has an unknown dtype '", name, "'");
    }
  }
  std::vector<int64_t> shape(const char* what) {
    std::vector<int64_t> s(count(what, 8));
    for (auto& d : s) {
      d = pod<int64_t>(what);
      if (d < 0 || d > (int64_t(1) << 40)) bad(what, " has an invalid dimension ", d);
    }
    return s;
  }
  ShapeExpr dim(const char* what, int depth = 0) {
    if (depth > kMaxShapeExprDepth) bad(what, " has a dimension nested more than ", kMaxShapeExprDepth, " deep");
    const uint8_t op = pod<uint8_t>(what);
    if (op > static_cast<uint8_t>(ShapeExpr::Op::Max)) bad(what, " has a dimension of unknown operation ", int(op));
    switch (static_cast<ShapeExpr::Op>(op)) {
      case ShapeExpr::Op::Const: {
        const int64_t v = pod<int64_t>(what);
        if (v < -(int64_t(1) << 40) || v > (int64_t(1) << 40)) bad(what, " has an invalid dimension ", v);
        return v;
      }
      case ShapeExpr::Op::Var: {
        std::string name = str(what);
        if (name.empty()) bad(what, " has a dimension variable without a name");
        return ShapeExpr::var(std::move(name));
      }
      default: {
        ShapeExpr a = dim(what, depth + 1);
        return ShapeExpr::binary(static_cast<ShapeExpr::Op>(op), a, dim(what, depth + 1));
      }
    }
  }
  // Version 3 on: a shape of expressions; before, constants only.
  SymbolicShape symbolic(const char* what) {
    if (version_ < 3) return symbolic_shape(shape(what));
    SymbolicShape s(count(what, 9));
    for (ShapeExpr& d : s) {
      d = dim(what);
      if (d.is_constant() && d.constant() < 0) bad(what, " has an invalid dimension ", d.constant());
    }
    return s;
  }
  std::vector<std::string> strs(const char* what) {
    std::vector<std::string> v(count(what, 4));
    for (std::string& s : v) s = str(what);
    return v;
  }
  std::vector<int64_t> i64s(const char* what) {
    std::vector<int64_t> v(count(what, 8));
    for (auto& x : v) x = pod<int64_t>(what);
    return v;
  }
  std::vector<int> ints(const char* what) {
    std::vector<int> v(count(what, 4));
    for (auto& x : v) x = pod<int32_t>(what);
    return v;
  }
  std::vector<BufferSpec> buffers(const char* what) {
    std::vector<BufferSpec> specs(count(what, 12));
    for (BufferSpec& a : specs) {
      a.name = str("a buffer name");
      a.shape = symbolic("a buffer shape");
      a.dtype = dtype("a buffer");
    }
    return specs;
  }
  bool done() const { return p_ == end_; }

  template <typename... Parts>
  [[noreturn]] static void bad(const Parts&... parts) {
    fail("corrupt module metadata: ", parts...);
  }

 private:
  void need(size_t n, const char* what) {
    if (static_cast<size_t>(end_ - p_) < n) bad("it ends inside ", what);
  }
  const char* p_;
  const char* end_;
  uint32_t version_;
};

void check_index(int v, size_t size, const std::string& what) {
  if (v < 0 || static_cast<size_t>(v) >= size) Reader::bad(what, " ", v, " is out of range (0..", size, ")");
}

bool has_code_for(const ModuleMetadata& m, const std::string& kernel) {
  for (const KernelSignature& k : m.kernels)
    if (k.name == kernel) return true;
  for (const DeviceProgramSpec& d : m.device_programs)
    if (d.name == kernel) return true;
  return false;
}

// Whether CPU kernel `kernel` takes dimension variables' values, which only a plan of symbolic
// sizes passes (a device program finds them in its arguments' shapes).
bool takes_sizes(const ModuleMetadata& m, const std::string& kernel) {
  for (const KernelSignature& k : m.kernels)
    if (k.name == kernel && !k.shape_vars.empty()) return true;
  return false;
}

// Every variable of `shape` is one of `vars`.
void check_vars(const SymbolicShape& shape, const std::vector<std::string>& vars, const std::string& what) {
  std::vector<std::string> used;
  for (const ShapeExpr& d : shape) d.collect_vars(used);
  for (const std::string& v : used)
    if (std::find(vars.begin(), vars.end(), v) == vars.end())
      Reader::bad(what, " has the dimension variable ", v, ", which is not among its variables");
}

// Version 4 on, a program's dimension variables follow its name, a launch's grid is three
// dimensions (expressions of them) and its variables follow its buffers; before, programs of
// static shapes only, their grids constants.
void encode_device_programs(Writer& w, const std::vector<DeviceProgramSpec>& programs, uint32_t version) {
  w.u32(programs.size());
  for (const DeviceProgramSpec& d : programs) {
    if (version < 4 && !d.shape_vars.empty())
      fail("internal error: module format version ", version, " cannot hold device program '", d.name,
           "' of symbolic sizes");
    w.str(d.name);
    if (version >= 4) w.strs(d.shape_vars);
    w.buffers(d.args);
    w.buffers(d.workspace);
    w.u32(d.kernels.size());
    for (const DeviceKernelLaunch& k : d.kernels) {
      w.str(k.name);
      for (const ShapeExpr& e : k.grid) {
        if (version >= 4) w.dim(e);
        else w.pod(static_cast<uint64_t>(e.constant()));
      }
      for (size_t e : k.config.block) w.pod(static_cast<uint64_t>(e));
      w.pod(static_cast<uint64_t>(k.config.dynamic_shared_bytes));
      w.ints(k.buffers);
      if (version >= 4) w.ints(k.shape_vars);
    }
    w.pod(static_cast<uint8_t>(d.format));
    w.str(d.code);
  }
}

// A launch's grid extent: a constant any device could launch (more would overflow OpenCL's
// grid * block), or an expression of the program's variables, checked at each call.
ShapeExpr grid_extent(Reader& r, const DeviceProgramSpec& d, const std::string& kernel, uint32_t version) {
  if (version >= 4) {
    ShapeExpr e = r.dim("a launch's grid");
    if (e.is_constant() && (e.constant() <= 0 || e.constant() >= (int64_t(1) << 31)))
      Reader::bad("device kernel '", kernel, "' has a grid extent of ", e.constant());
    check_vars({e}, d.shape_vars, "device kernel '" + kernel + "' grid");
    return e;
  }
  const uint64_t g = r.pod<uint64_t>("a launch's grid");
  if (g == 0 || g >= (uint64_t(1) << 31)) Reader::bad("device kernel '", kernel, "' has a grid extent of ", g);
  return static_cast<int64_t>(g);
}

std::vector<DeviceProgramSpec> decode_device_programs(Reader& r, uint32_t version) {
  std::vector<DeviceProgramSpec> programs(r.count("the device programs", 14));
  for (DeviceProgramSpec& d : programs) {
    d.name = r.str("a device program's name");
    if (version >= 4) d.shape_vars = r.strs("a device program's dimension variables");
    d.args = r.buffers("a device program's arguments");
    d.workspace = r.buffers("a device program's workspace");
    for (const BufferSpec& b : d.args) check_vars(b.shape, d.shape_vars, "device program '" + d.name + "' argument");
    for (const BufferSpec& b : d.workspace)
      check_vars(b.shape, d.shape_vars, "device program '" + d.name + "' workspace");
    d.kernels.resize(r.count("a device program's kernels", 60));
    const size_t buffers = d.args.size() + d.workspace.size();
    for (DeviceKernelLaunch& k : d.kernels) {
      k.name = r.str("a device kernel's name");
      for (ShapeExpr& e : k.grid) e = grid_extent(r, d, k.name, version);
      for (size_t& e : k.config.block) e = r.pod<uint64_t>("a launch's block");
      k.config.dynamic_shared_bytes = r.pod<uint64_t>("a launch's shared memory");
      size_t threads = 1;
      for (size_t e : k.config.block) threads = e > 4096 ? 0 : threads * e;
      if (threads == 0 || threads > 4096 || k.config.dynamic_shared_bytes > (size_t(1) << 24))
        Reader::bad("device kernel '", k.name, "' has an invalid block (", threads, " threads, ",
                    k.config.dynamic_shared_bytes, " bytes of shared memory)");
      k.buffers = r.ints("a device kernel's buffers");
      for (int b : k.buffers) check_index(b, buffers, "device kernel '" + k.name + "': buffer");
      if (version >= 4) k.shape_vars = r.ints("a device kernel's dimension variables");
      for (int v : k.shape_vars) check_index(v, d.shape_vars.size(), "device kernel '" + k.name + "': variable");
    }
    const uint8_t format = r.pod<uint8_t>("a device program's code format");
    if (format > static_cast<uint8_t>(DeviceCodeFormat::PTX))
      Reader::bad("device program '", d.name, "' has the unknown code format ", int(format));
    d.format = static_cast<DeviceCodeFormat>(format);
    if (d.format != programs.front().format)
      Reader::bad("device program '", d.name, "' holds code of another kind of device than the first program's");
    d.code = r.str("a device program's code");
  }
  return programs;
}

// A symbolic plan's variables are the ones its shapes, slots and kernels use; the sizes that
// depend on them are checked at each size (GraphExecutor).
void validate_symbolic(const GraphPlan& p, const ModuleMetadata& m) {
  for (size_t id = 0; id < p.tensors.size(); ++id)
    check_vars(p.symbolic_shapes[id], p.shape_vars, "tensor '" + p.tensors[id].name + "'");
  check_vars(p.slot_bytes, p.shape_vars, "the arena slots");
  for (const KernelSignature& k : m.kernels) {
    const bool called =
        std::any_of(p.steps.begin(), p.steps.end(), [&](const GraphPlan::Step& s) { return s.kernel == k.name; });
    if (!called) continue;  // another plan's (a program's stages each have their own variables)
    for (const std::string& v : k.shape_vars)
      if (std::find(p.shape_vars.begin(), p.shape_vars.end(), v) == p.shape_vars.end())
        Reader::bad("kernel '", k.name, "' takes the dimension variable ", v, ", which the plan does not have");
    for (const BufferSpec& a : k.args)
      check_vars(a.shape, k.shape_vars, "kernel '" + k.name + "' argument '" + a.name + "'");
  }
}

// A plan of `m` (its plan or a specialized one) must be safe to follow: the executor indexes with
// these numbers without checks.
void validate(const GraphPlan& p, const ModuleMetadata& m) {
  const size_t n = p.tensors.size();
  const bool symbolic = p.is_symbolic();
  if (symbolic) validate_symbolic(p, m);
  for (size_t id = 0; id < n; ++id) {
    const Info& t = p.tensors[id];
    const std::string what = "tensor " + std::to_string(id) + " ('" + t.name + "')";
    if (t.alias_of >= 0) {
      // Views point back at an earlier tensor, so alias chains end.
      if (static_cast<size_t>(t.alias_of) >= id) Reader::bad(what, " aliases a later tensor");
      if (!symbolic && bytes_of(t.shape, t.dtype) > bytes_of(p.tensors[t.alias_of].shape, p.tensors[t.alias_of].dtype))
        Reader::bad(what, " is larger than the tensor it aliases");
      continue;
    }
    switch (t.kind) {
      case Info::Input:
        check_index(t.index, p.inputs.size(), what + ": input index");
        break;
      case Info::Output:
        check_index(t.index, p.outputs.size(), what + ": output index");
        break;
      case Info::Constant:
        check_index(t.index, p.constants.size(), what + ": constant index");
        if (!equals(symbolic ? p.symbolic_shapes[id] : symbolic_shape(t.shape), p.constants[t.index].shape()) ||
            p.constants[t.index].dtype() != t.dtype)
          Reader::bad(what, " does not match its constant's shape and dtype");
        break;
      case Info::Intermediate:
        if (symbolic) {
          check_index(t.index, p.slot_bytes.size(), what + ": arena slot");
          break;
        }
        check_index(t.index, p.slot_offsets.size(), what + ": arena slot");
        if (p.slot_offsets[t.index] < 0 || p.slot_offsets[t.index] % 64 != 0 ||
            static_cast<uint64_t>(p.slot_offsets[t.index]) + bytes_of(t.shape, t.dtype) >
                static_cast<uint64_t>(p.arena_bytes))
          Reader::bad(what, " does not fit in the arena");
        break;
      default:
        Reader::bad(what, " has an unknown kind");
    }
  }
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    check_index(p.inputs[i], n, "input " + std::to_string(i) + ": tensor");
    if (p.tensors[p.inputs[i]].kind != Info::Input || p.tensors[p.inputs[i]].index != static_cast<int>(i))
      Reader::bad("input ", i, " is not an input tensor");
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    check_index(p.outputs[i], n, "output " + std::to_string(i) + ": tensor");
    if (p.tensors[p.outputs[i]].kind != Info::Output || p.tensors[p.outputs[i]].index != static_cast<int>(i))
      Reader::bad("output ", i, " is not an output tensor");
  }
  for (size_t s = 0; s < p.steps.size(); ++s) {
    for (int a : p.steps[s].args) check_index(a, n, "step " + std::to_string(s) + ": tensor");
    if (!p.steps[s].kernel.empty() && !has_code_for(m, p.steps[s].kernel))
      Reader::bad("step ", s, " calls '", p.steps[s].kernel, "', which is neither a kernel nor a device program");
    if (!symbolic && takes_sizes(m, p.steps[s].kernel))
      Reader::bad("step ", s, " of a plan of static sizes calls '", p.steps[s].kernel,
                  "', which takes dimension variables");
    if (p.steps[s].kernel.empty() &&
        (p.steps[s].args.size() != 2 ||
         (!symbolic && bytes_of(p.tensors[p.steps[s].args[0]].shape, p.tensors[p.steps[s].args[0]].dtype) !=
                           bytes_of(p.tensors[p.steps[s].args[1]].shape, p.tensors[p.steps[s].args[1]].dtype))))
      Reader::bad("step ", s, " copies between tensors of different sizes");
  }
}

// Each specialized plan takes and gives what the plan does at its sizes, which no other has.
void validate_specialized(const ModuleMetadata& m) {
  std::vector<std::map<std::string, int64_t>> seen;
  for (const GraphPlan& hot : m.specialized) {
    try {
      seen.push_back(hot_sizes_of(m.plan, hot));
    } catch (const Error& e) {
      Reader::bad(e.what());
    }
    if (std::count(seen.begin(), seen.end(), seen.back()) > 1)
      Reader::bad("two specialized plans for ", sizes_str(m.plan, seen.back()));
  }
}

// A plan's tensors, steps, inputs, outputs, constants (their places in the weights) and static
// arena; a symbolic plan's variables and slots follow elsewhere (encode_metadata).
void encode_plan(Writer& w, const GraphPlan& p, const std::vector<uint64_t>& offsets) {
  w.u32(p.tensors.size());
  for (size_t id = 0; id < p.tensors.size(); ++id) {
    const Info& t = p.tensors[id];
    w.pod(static_cast<uint8_t>(t.kind));
    w.str(t.name);
    w.shape(p.is_symbolic() ? p.symbolic_shapes.at(id) : symbolic_shape(t.shape), "tensor '" + t.name + "'");
    w.str(t.dtype.str());
    w.pod(static_cast<int32_t>(t.index));
    w.pod(static_cast<int32_t>(t.alias_of));
  }
  w.u32(p.steps.size());
  for (const GraphPlan::Step& s : p.steps) {
    w.str(s.kernel);
    w.ints(s.args);
    w.pod(static_cast<uint8_t>(s.elementwise));
  }
  w.ints(p.inputs);
  w.ints(p.outputs);
  w.u32(p.constants.size());
  for (size_t i = 0; i < p.constants.size(); ++i) {
    w.shape(p.constants[i].shape());
    w.str(p.constants[i].dtype().str());
    w.pod(offsets[i]);
  }
  // A symbolic plan's offsets come with each size: it stores its slots' sizes instead.
  const bool symbolic = p.is_symbolic();
  w.u32(symbolic ? 0 : p.slot_offsets.size());
  if (!symbolic)
    for (int64_t o : p.slot_offsets) w.pod(o);
  w.pod(symbolic ? int64_t{0} : p.arena_bytes);
}

// What encode_plan wrote, the constants views of `weights`; the tensors' shapes go to `shapes`
// until finish_plan knows whether the plan has variables.
GraphPlan decode_plan(Reader& r, std::vector<SymbolicShape>& shapes, char* weights, size_t weights_size,
                      const std::shared_ptr<void>& owner) {
  GraphPlan p;
  p.tensors.resize(r.count("the tensors", 17));
  for (Info& t : p.tensors) {
    uint8_t kind = r.pod<uint8_t>("a tensor kind");
    if (kind > Info::Intermediate) Reader::bad("a tensor has the unknown kind ", int(kind));
    t.kind = static_cast<Info::Kind>(kind);
    t.name = r.str("a tensor name");
    shapes.push_back(r.symbolic("a tensor shape"));
    t.dtype = r.dtype("a tensor");
    t.index = r.pod<int32_t>("a tensor index");
    t.alias_of = r.pod<int32_t>("a tensor alias");
  }
  p.steps.resize(r.count("the steps", 9));
  for (GraphPlan::Step& s : p.steps) {
    s.kernel = r.str("a step's kernel");
    s.args = r.ints("a step's arguments");
    s.elementwise = r.pod<uint8_t>("a step's flags") != 0;
  }
  p.inputs = r.ints("the inputs");
  p.outputs = r.ints("the outputs");
  p.constants.resize(r.count("the constants", 16));
  for (size_t i = 0; i < p.constants.size(); ++i) {
    std::vector<int64_t> shape = r.shape("a constant shape");
    DataType dtype = r.dtype("a constant");
    uint64_t offset = r.pod<uint64_t>("a constant offset");
    uint64_t bytes = bytes_of(shape, dtype);
    if (offset % 64 != 0 || offset > weights_size || bytes > weights_size - offset)
      Reader::bad("constant ", i, " (", bytes, " bytes at offset ", offset, ") lies outside the weights (",
                  weights_size, " bytes) or is not 64-byte aligned");
    p.constants[i] = NDArray::view(weights + offset, std::move(shape), dtype, owner);
  }
  p.slot_offsets.resize(r.count("the arena slots", 8));
  for (auto& o : p.slot_offsets) o = r.pod<int64_t>("an arena slot");
  p.arena_bytes = r.pod<int64_t>("the arena size");
  if (p.arena_bytes < 0 || p.arena_bytes > (int64_t(1) << 40))
    Reader::bad("the arena size ", p.arena_bytes, " is invalid");
  return p;
}

// The tensors' shapes: expressions in a plan with variables, else values.
void finish_plan(GraphPlan& p, std::vector<SymbolicShape> shapes) {
  for (size_t id = 0; id < p.tensors.size(); ++id) {
    if (p.is_symbolic()) {
      p.tensors[id].shape.assign(shapes[id].size(), 0);  // values come with each size
    } else if (is_static(shapes[id])) {
      p.tensors[id].shape = static_shape(shapes[id], "a tensor shape");
    } else {
      Reader::bad("tensor '", p.tensors[id].name, "' has a symbolic shape in a plan without dimension variables");
    }
  }
  if (p.is_symbolic()) p.symbolic_shapes = std::move(shapes);
}

// Version 6 on: with the number of reads that need each (before: always some).
void encode_nonempty(Writer& w, const GraphPlan& p, uint32_t version) {
  w.u32(p.nonempty.size());
  for (const GraphPlan::NonEmpty& n : p.nonempty) {
    w.dim(n.dim);
    w.str(n.what);
    if (version >= 6) w.dim(n.reads);
  }
}

void decode_nonempty(Reader& r, GraphPlan& p, uint32_t version) {
  p.nonempty.resize(r.count("the dimensions needed non-empty", 13));
  for (GraphPlan::NonEmpty& n : p.nonempty) {
    n.dim = r.dim("a dimension needed non-empty");
    n.what = r.str("what needs a dimension non-empty");
    if (version >= 6) n.reads = r.dim("the reads that need a dimension non-empty");
    check_vars({n.dim, n.reads}, p.shape_vars, "a dimension needed non-empty");
  }
}

// A program: its inputs and their types, outputs and their types, steps (bodies nested), and the
// constants its steps read, whose bytes it holds.
void encode_program(Writer& w, const ProgramPlan& p) {
  w.strs(p.inputs);
  w.u32(p.input_types.size());
  for (const ProgramInputType& t : p.input_types) {
    w.pod(static_cast<uint8_t>(t.kind));
    w.buffers({t.tensor});
    w.pod(static_cast<uint8_t>(t.element_dtype | t.element_shape << 1));
  }
  w.strs(p.outputs);
  w.u32(p.output_types.size());
  for (const ProgramOutputType& t : p.output_types) {
    w.str(t.dtype.str());
    w.pod(static_cast<uint8_t>(t.shape.has_value()));
    if (t.shape) w.i64s(*t.shape);
  }
  w.u32(p.steps.size());
  for (const ProgramStep& step : p.steps) {
    w.pod(static_cast<uint8_t>(step.kind));
    w.str(step.origin);
    w.strs(step.inputs);
    w.strs(step.outputs);
    w.pod(static_cast<int32_t>(step.stage));
    w.str(step.builtin);
    w.u32(step.attrs.items().size());
    for (const StepAttrs::Item& a : step.attrs.items()) {
      w.str(a.name);
      w.pod(static_cast<uint8_t>(a.scalar));
      w.i64s(a.values);
    }
    w.u32(step.bodies.size());
    for (const auto& body : step.bodies) encode_program(w, *body);
  }
  w.u32(p.constants.size());
  for (const auto& [name, value] : p.constants) {
    w.str(name);
    w.shape(value.shape());
    w.str(value.dtype().str());
    w.str(std::string(static_cast<const char*>(value.data()), value.nbytes()));
  }
}

// The bodies each kind of step has.
size_t bodies_of(ProgramStep::Kind kind) {
  switch (kind) {
    case ProgramStep::Kind::If:
      return 2;
    case ProgramStep::Kind::Loop:
    case ProgramStep::Kind::Scan:
    case ProgramStep::Kind::SequenceMap:
      return 1;
    default:
      return 0;
  }
}

// What encode_program wrote, validated: every stage a plan of the module taking the step's inputs
// and giving at least its outputs, every builtin one the runtime has, the bodies each kind needs.
std::shared_ptr<const ProgramPlan> decode_program(Reader& r, const std::vector<GraphPlan>& stages, int depth) {
  if (depth > kMaxShapeExprDepth) Reader::bad("its program nests bodies more than ", kMaxShapeExprDepth, " deep");
  auto p = std::make_shared<ProgramPlan>();
  p->inputs = r.strs("the program's inputs");
  p->input_types.resize(r.count("the program's input types", 14));
  for (ProgramInputType& t : p->input_types) {
    const uint8_t kind = r.pod<uint8_t>("a program input's kind");
    if (kind > ProgramInputType::Optional) Reader::bad("a program input has the unknown kind ", int(kind));
    t.kind = static_cast<ProgramInputType::Kind>(kind);
    std::vector<BufferSpec> spec = r.buffers("a program input's type");
    if (spec.size() != 1) Reader::bad("a program input has ", spec.size(), " types");
    t.tensor = spec[0];
    const uint8_t element = r.pod<uint8_t>("what a program input's elements declare");
    t.element_dtype = element & 1;
    t.element_shape = element & 2;
  }
  if (!p->input_types.empty() && p->input_types.size() != p->inputs.size())
    Reader::bad("the program has ", p->inputs.size(), " inputs and ", p->input_types.size(), " input types");
  p->outputs = r.strs("the program's outputs");
  p->output_types.resize(r.count("the program's output types", 5));
  for (ProgramOutputType& t : p->output_types) {
    t.dtype = r.dtype("a program output");
    if (r.pod<uint8_t>("whether a program output's shape is declared")) t.shape = r.shape("a program output's shape");
  }
  p->steps.resize(r.count("the program's steps", 26));
  for (ProgramStep& step : p->steps) {
    const uint8_t kind = r.pod<uint8_t>("a step's kind");
    if (kind > static_cast<uint8_t>(ProgramStep::Kind::SequenceMap))
      Reader::bad("a step has the unknown kind ", int(kind));
    step.kind = static_cast<ProgramStep::Kind>(kind);
    step.origin = r.str("a step's origin");
    step.inputs = r.strs("a step's inputs");
    step.outputs = r.strs("a step's outputs");
    step.stage = r.pod<int32_t>("a step's stage");
    step.builtin = r.str("a step's builtin");
    const size_t n_attrs = r.count("a step's attributes", 9);
    for (size_t a = 0; a < n_attrs; ++a) {
      std::string name = r.str("an attribute's name");
      const bool scalar = r.pod<uint8_t>("an attribute's kind") != 0;
      step.attrs.set(name, r.i64s("an attribute's values"), scalar);
    }
    step.bodies.resize(r.count("a step's bodies", 16));
    for (auto& body : step.bodies) body = decode_program(r, stages, depth + 1);
    const std::string what = "step '" + step.origin + "'";
    if (step.bodies.size() != bodies_of(step.kind)) Reader::bad(what, " has ", step.bodies.size(), " bodies");
    if (step.kind == ProgramStep::Kind::Builtin && !is_builtin(step.builtin))
      Reader::bad(what, " runs the unknown builtin '", step.builtin, "'");
    if (step.kind != ProgramStep::Kind::Stage) continue;
    check_index(step.stage, stages.size(), what + ": stage");
    const GraphPlan& stage = stages[step.stage];
    if (stage.inputs.size() != step.inputs.size() || stage.outputs.size() < step.outputs.size())
      Reader::bad(what, " passes ", step.inputs.size(), " inputs and takes ", step.outputs.size(),
                  " outputs; its stage's plan has ", stage.inputs.size(), " and ", stage.outputs.size());
  }
  p->constants.resize(r.count("the program's constants", 16));
  for (auto& [name, value] : p->constants) {
    name = r.str("a program constant's name");
    std::vector<int64_t> shape = r.shape("a program constant's shape");
    const DataType dtype = r.dtype("a program constant");
    const std::string bytes = r.str("a program constant's bytes");
    if (bytes.size() != bytes_of(shape, dtype))
      Reader::bad("program constant '", name, "' has the wrong number of bytes");
    value = NDArray::empty(shape, dtype);
    std::memcpy(value.data(), bytes.data(), bytes.size());
  }
  return p;
}
}  // namespace

std::vector<const GraphPlan*> plans_of(const ModuleMetadata& m) {
  std::vector<const GraphPlan*> plans{&m.plan};
  for (const GraphPlan& p : m.specialized) plans.push_back(&p);
  for (const GraphPlan& p : m.stages) plans.push_back(&p);
  return plans;
}

WeightsLayout weights_layout(const ModuleMetadata& m) {
  WeightsLayout layout;
  // A constant that several plans share (driver/constant_pool.h) is written once.
  std::map<std::pair<const void*, size_t>, uint64_t> placed;
  for (const GraphPlan* p : plans_of(m)) {
    layout.offsets.emplace_back();
    for (const NDArray& c : p->constants) {
      auto [it, inserted] = placed.emplace(std::make_pair(c.data(), c.nbytes()), layout.bytes);
      if (inserted) layout.bytes = align64(layout.bytes + c.nbytes());
      layout.offsets.back().push_back(it->second);
    }
  }
  return layout;
}

std::string encode_metadata(const ModuleMetadata& m, uint32_t version) {
  if (version < 2 && !m.device_programs.empty())
    fail("internal error: module format version ", version, " cannot hold device programs");
  if (version < 3 && m.plan.is_symbolic())
    fail("internal error: module format version ", version, " cannot hold a plan of symbolic sizes");
  if (version < 5 && !m.specialized.empty())
    fail("internal error: module format version ", version, " cannot hold plans specialized for hot sizes");
  Writer w(version);
  w.str(m.target);
  w.str(m.arch);
  w.u32(m.cpu_features.size());
  for (const auto& f : m.cpu_features) w.str(f);
  w.u32(m.kernels.size());
  for (const KernelSignature& k : m.kernels) {
    w.str(k.name);
    w.buffers(k.args);
    if (version >= 3) w.strs(k.shape_vars);
  }
  const WeightsLayout weights = weights_layout(m);
  encode_plan(w, m.plan, weights.offsets[0]);
  if (version >= 2) encode_device_programs(w, m.device_programs, version);
  if (version >= 3) {
    w.strs(m.plan.shape_vars);
    w.shape(m.plan.slot_bytes, "the arena slots");
  }
  if (version >= 5) {
    w.u32(m.specialized.size());
    for (size_t i = 0; i < m.specialized.size(); ++i) {
      if (m.specialized[i].is_symbolic()) fail("internal error: a specialized plan has symbolic sizes");
      encode_plan(w, m.specialized[i], weights.offsets[i + 1]);
    }
    encode_nonempty(w, m.plan, version);
  } else if (!m.plan.nonempty.empty()) {
    fail("internal error: module format version ", version, " cannot hold the dimensions a plan needs non-empty");
  }
  if (version >= 6) {
    w.pod(static_cast<uint8_t>(m.program != nullptr));
    if (m.program) {
      w.u32(m.stages.size());
      for (size_t i = 0; i < m.stages.size(); ++i) {
        encode_plan(w, m.stages[i], weights.offsets[1 + m.specialized.size() + i]);
        w.strs(m.stages[i].shape_vars);
        w.shape(m.stages[i].slot_bytes, "the arena slots");
        encode_nonempty(w, m.stages[i], version);
      }
      encode_program(w, *m.program);
    }
  } else if (m.program) {
    fail("internal error: module format version ", version, " cannot hold a program");
  }
  return w.take();
}

ModuleMetadata decode_metadata(const char* data, size_t size, uint32_t version, char* weights, size_t weights_size,
                               std::shared_ptr<void> owner) {
  Reader r(data, size, version);
  ModuleMetadata m;
  m.target = r.str("the target");
  m.arch = r.str("the architecture");
  m.cpu_features.resize(r.count("the CPU features", 4));
  for (auto& f : m.cpu_features) f = r.str("a CPU feature");
  m.kernels.resize(r.count("the kernels", 8));
  for (KernelSignature& k : m.kernels) {
    k.name = r.str("a kernel name");
    k.args = r.buffers("a kernel's arguments");
    if (version >= 3) k.shape_vars = r.strs("a kernel's dimension variables");
  }
  std::vector<SymbolicShape> shapes;
  m.plan = decode_plan(r, shapes, weights, weights_size, owner);
  if (version >= 2) m.device_programs = decode_device_programs(r, version);
  if (version >= 3) {
    m.plan.shape_vars = r.strs("the dimension variables");
    m.plan.slot_bytes = r.symbolic("the arena slots");
  }
  finish_plan(m.plan, std::move(shapes));
  if (version >= 5) {
    m.specialized.resize(r.count("the specialized plans", 30));
    if (!m.specialized.empty() && !m.plan.is_symbolic())
      Reader::bad("it has plans specialized for hot sizes beside a plan of static sizes");
    for (GraphPlan& p : m.specialized) {
      std::vector<SymbolicShape> specialized_shapes;
      p = decode_plan(r, specialized_shapes, weights, weights_size, owner);
      finish_plan(p, std::move(specialized_shapes));
    }
    decode_nonempty(r, m.plan, version);
  }
  if (version >= 6 && r.pod<uint8_t>("whether it holds a program")) {
    if (!m.plan.steps.empty() || !m.plan.inputs.empty() || !m.specialized.empty())
      Reader::bad("it holds a program beside a plan");
    m.stages.resize(r.count("the stages", 30));
    for (GraphPlan& p : m.stages) {
      std::vector<SymbolicShape> stage_shapes;
      p = decode_plan(r, stage_shapes, weights, weights_size, owner);
      p.shape_vars = r.strs("a stage's dimension variables");
      p.slot_bytes = r.symbolic("a stage's arena slots");
      finish_plan(p, std::move(stage_shapes));
      decode_nonempty(r, p, version);
    }
    m.program = decode_program(r, m.stages, 0);
  }
  if (!r.done()) Reader::bad("it has trailing bytes");
  for (const GraphPlan* p : plans_of(m)) validate(*p, m);
  validate_specialized(m);
  return m;
}

}  // namespace tessera::runtime
