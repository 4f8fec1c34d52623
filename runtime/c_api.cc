// The C API (tessera_runtime.h) over load_module and GraphExecutor, or a module's program
// (ProgramModule) when its inputs and outputs are tensors: exceptions become status codes plus a
// thread-local message.
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/module_loader.h"
#include "runtime/npy.h"
#include "runtime/tessera_runtime.h"

struct TesseraModule {
  tessera::runtime::LoadedModule loaded;
  std::string device;  // where it runs: "opencl(0)"
  // On a device, each run's outputs copied to the host, where the C API hands them out.
  std::vector<tessera::runtime::NDArray> host_outputs;
  // A module of symbolic sizes: each tensor's shape as declared, -1 for a symbolic dimension.
  std::vector<std::vector<int64_t>> declared_shapes;
  // A program's (loaded.program) inputs and outputs as declared (an output whose rank is not
  // declared has none), its inputs as set, and its last run's outputs (in host_outputs).
  struct Declared {
    std::string name;
    std::optional<tessera::runtime::DataType> dtype;
    std::optional<std::vector<int64_t>> shape;
  };
  std::vector<Declared> program_inputs, program_outputs;
  std::vector<tessera::runtime::NDArray> inputs_set;

  size_t num_inputs() const { return loaded.program ? program_inputs.size() : loaded.executor->num_inputs(); }
  size_t num_outputs() const { return loaded.program ? program_outputs.size() : loaded.executor->num_outputs(); }
};
struct TesseraArray {
  tessera::runtime::NDArray array;
};

namespace {

using tessera::runtime::DataType;
using tessera::runtime::NDArray;

thread_local std::string t_last_error;

// A failure of the caller's own making: a null pointer, an index out of range.
[[noreturn]] void invalid(const std::string& message) { throw std::invalid_argument(message); }

constexpr DataType kDTypes[] = {DataType::Float(16), DataType::Float(32), DataType::Float(64), DataType::Int(8),
                                DataType::Int(16),   DataType::Int(32),   DataType::Int(64),   DataType::UInt(8),
                                DataType::UInt(16),  DataType::UInt(32),  DataType::UInt(64),  DataType::Bool()};

bool valid(TesseraDType d) { return static_cast<int>(d) >= 0 && static_cast<size_t>(d) < std::size(kDTypes); }

DataType to_runtime(TesseraDType d) {
  if (!valid(d)) invalid("invalid dtype code " + std::to_string(static_cast<int>(d)));
  return kDTypes[d];
}

TesseraDType to_c(DataType t) {
  for (size_t i = 0; i < std::size(kDTypes); ++i)
    if (kDTypes[i] == t) return static_cast<TesseraDType>(i);
  tessera::fail("dtype ", t.str(), " has no C API code");
}

template <typename T>
T* require(T* p, const char* what) {
  if (!p) invalid(std::string(what) + " is NULL");
  return p;
}

NDArray view_of(const TesseraTensor* t) {
  require(t, "the tensor");
  if (t->ndim < 0 || (t->ndim > 0 && !t->shape)) invalid("the tensor's shape is missing");
  std::vector<int64_t> shape(t->shape, t->shape + t->ndim);
  NDArray a = NDArray::view(t->data, shape, to_runtime(t->dtype), nullptr);
  if (!t->data && a.numel() > 0) invalid("the tensor's data is NULL");
  return a;
}

size_t checked_index(int32_t index, size_t count, const char* what) {
  if (index < 0 || static_cast<size_t>(index) >= count)
    invalid(std::string(what) + " index " + std::to_string(index) + " is out of range (the module has " +
            std::to_string(count) + ")");
  return static_cast<size_t>(index);
}

// "(N, 4)" as a declared shape: a symbolic dimension as "?".
std::string declared_str(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t k = 0; k < dims.size(); ++k)
    s += (k ? ", " : "") + (dims[k] < 0 ? std::string("?") : std::to_string(dims[k]));
  return s + (dims.size() == 1 ? ",)" : ")");
}

std::vector<int64_t> declared_dims(const tessera::runtime::SymbolicShape& shape) {
  std::vector<int64_t> dims;
  for (const auto& d : shape) dims.push_back(d.is_constant() ? d.constant() : -1);
  return dims;
}

// A program's inputs and outputs, which must be tensors (the C API passes nothing else).
void declare_program(TesseraModule& m, const std::string& path) {
  using tessera::runtime::ProgramInputType;
  const tessera::runtime::ProgramPlan& plan = m.loaded.program->plan();
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const ProgramInputType& t = plan.input_types.at(i);
    if (t.kind != ProgramInputType::Tensor)
      tessera::fail("cannot load module '", path, "' through the C API: its input '", plan.inputs[i], "' is ",
                    t.kind == ProgramInputType::Sequence ? "a sequence" : "an optional",
                    ", and the C API passes tensors only");
    m.program_inputs.push_back({plan.inputs[i], t.tensor.dtype, declared_dims(t.tensor.shape)});
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    TesseraModule::Declared d{plan.outputs[i], {}, {}};
    if (i < plan.output_types.size()) {
      d.dtype = plan.output_types[i].dtype;
      d.shape = plan.output_types[i].shape;
    }
    m.program_outputs.push_back(d);
  }
  m.inputs_set.resize(plan.inputs.size());
  const auto& stages = m.loaded.program->stages();
  m.device = stages.empty() ? "cpu(0)" : stages[0]->device().str();
}

TesseraModule* load(const char* path, std::optional<tessera::runtime::Device> device) {
  auto m = std::make_unique<TesseraModule>();
  m->loaded = tessera::runtime::load_module(require(path, "the path"), device);
  if (m->loaded.program) {
    declare_program(*m, path);
    return m.release();
  }
  const auto& ex = *m->loaded.executor;
  m->device = ex.device().str();
  for (const auto& shape : ex.plan().symbolic_shapes) m->declared_shapes.push_back(declared_dims(shape));
  if (ex.device().type != tessera::runtime::DeviceType::CPU)
    for (size_t i = 0; i < ex.num_outputs(); ++i)
      m->host_outputs.push_back(NDArray::empty(ex.output_info(i).shape, ex.output_info(i).dtype));
  return m.release();
}

// Output i in host memory.
const NDArray& host_output(const TesseraModule* m, size_t i) {
  if (m->loaded.program && m->host_outputs.empty()) tessera::fail("the module has not run yet: no output to read");
  return m->host_outputs.empty() ? m->loaded.executor->output(i) : m->host_outputs[i];
}

std::string output_name(const TesseraModule* m, size_t i) {
  return m->loaded.program ? m->program_outputs.at(i).name : m->loaded.executor->output_info(i).name;
}

// `given` has the dtype and rank a program's input declares, and its constant dimensions.
void check_declared(const TesseraModule::Declared& d, const NDArray& given) {
  bool fits = given.dtype() == d.dtype && given.ndim() == static_cast<int64_t>(d.shape->size());
  for (size_t k = 0; fits && k < d.shape->size(); ++k) fits = (*d.shape)[k] < 0 || (*d.shape)[k] == given.shape()[k];
  if (!fits)
    tessera::fail("input '", d.name, "': expected ", d.dtype->str(), " of shape ", declared_str(*d.shape), ", got ",
                  given.dtype().str(), given.shape_str());
}

// Runs a program on the inputs set, its outputs (which must be tensors) kept in host_outputs.
void run_program(TesseraModule& m) {
  std::vector<tessera::runtime::ProgramValue> in;
  for (size_t i = 0; i < m.inputs_set.size(); ++i) {
    if (!m.inputs_set[i].defined()) tessera::fail("input '", m.program_inputs[i].name, "' is not set");
    in.emplace_back(m.inputs_set[i]);
  }
  std::vector<NDArray> out;
  for (const tessera::runtime::ProgramValue& v : m.loaded.program->run(in))
    out.push_back(v.as_tensor("output '" + m.program_outputs.at(out.size()).name + "' (the C API gives tensors)"));
  m.host_outputs = std::move(out);
}

void describe(const std::string& name, DataType dtype, const std::vector<int64_t>* shape, TesseraTensorInfo* info) {
  info->name = name.c_str();
  info->dtype = to_c(dtype);
  info->ndim = shape ? static_cast<int32_t>(shape->size()) : -1;
  info->shape = shape ? shape->data() : nullptr;
  size_t n = shape ? static_cast<size_t>(dtype.element_bytes()) : 0;  // 0: sized by each run
  if (shape)
    for (int64_t d : *shape) n = d < 0 ? 0 : n * static_cast<size_t>(d);
  info->nbytes = n;
}

// Tensor `id` of the module's plan.
void describe(const TesseraModule* m, int id, TesseraTensorInfo* info) {
  const auto& t = m->loaded.executor->plan().tensors.at(id);
  describe(t.name, t.dtype, m->declared_shapes.empty() ? &t.shape : &m->declared_shapes.at(id), info);
}

void describe(const TesseraModule::Declared& d, const char* what, TesseraTensorInfo* info) {
  if (!d.dtype)
    invalid(std::string("the model does not declare the element type of its ") + what + " '" + d.name +
            "'; run the module and read the output");
  describe(d.name, *d.dtype, d.shape ? &*d.shape : nullptr, info);
}

// The status for what `body` throws: the caller's mistakes are TESSERA_ERROR_INVALID_ARGUMENT,
// everything else `status`.
template <typename Body>
TesseraStatus api(TesseraStatus status, Body&& body) {
  t_last_error.clear();
  try {
    body();
    return TESSERA_OK;
  } catch (const std::invalid_argument& e) {
    t_last_error = e.what();
    return TESSERA_ERROR_INVALID_ARGUMENT;
  } catch (const std::bad_alloc&) {
    t_last_error = "out of memory";
  } catch (const std::exception& e) {
    t_last_error = e.what();
  }
  return status;
}

}  // namespace

extern "C" {

const char* tessera_last_error(void) { return t_last_error.c_str(); }

const char* tessera_dtype_name(TesseraDType dtype) {
  static const char* const names[] = {"float16", "float32", "float64", "int8",   "int16",  "int32",
                                      "int64",   "uint8",   "uint16",  "uint32", "uint64", "bool"};
  return valid(dtype) ? names[dtype] : "unknown";
}

size_t tessera_dtype_size(TesseraDType dtype) { return valid(dtype) ? kDTypes[dtype].element_bytes() : 0; }

TesseraStatus tessera_module_load(const char* path, TesseraModule** out) {
  return api(TESSERA_ERROR_LOAD, [&] {
    require(out, "the output pointer");
    *out = nullptr;
    *out = load(path, std::nullopt);
  });
}

TesseraStatus tessera_module_load_on(const char* path, const char* device, TesseraModule** out) {
  return api(TESSERA_ERROR_LOAD, [&] {
    require(out, "the output pointer");
    *out = nullptr;
    tessera::runtime::Device on;
    try {
      on = tessera::runtime::Device::parse(require(device, "the device"));
    } catch (const tessera::Error& e) {
      invalid(e.what());
    }
    *out = load(path, on);
  });
}

void tessera_module_free(TesseraModule* module) { delete module; }

const char* tessera_module_target(const TesseraModule* module) { return module ? module->loaded.target.c_str() : ""; }

const char* tessera_module_device(const TesseraModule* module) { return module ? module->device.c_str() : ""; }

TesseraStatus tessera_module_num_inputs(const TesseraModule* module, int32_t* count) {
  return api(TESSERA_ERROR_INVALID_ARGUMENT, [&] {
    *require(count, "the count pointer") = static_cast<int32_t>(require(module, "the module")->num_inputs());
  });
}

TesseraStatus tessera_module_num_outputs(const TesseraModule* module, int32_t* count) {
  return api(TESSERA_ERROR_INVALID_ARGUMENT, [&] {
    *require(count, "the count pointer") = static_cast<int32_t>(require(module, "the module")->num_outputs());
  });
}

TesseraStatus tessera_module_input_info(const TesseraModule* module, int32_t index, TesseraTensorInfo* info) {
  return api(TESSERA_ERROR_INVALID_ARGUMENT, [&] {
    if (require(module, "the module")->loaded.program)
      return describe(module->program_inputs[checked_index(index, module->num_inputs(), "input")], "input",
                      require(info, "the info pointer"));
    const auto& ex = *module->loaded.executor;
    describe(module, ex.plan().inputs[checked_index(index, ex.num_inputs(), "input")],
             require(info, "the info pointer"));
  });
}

TesseraStatus tessera_module_output_info(const TesseraModule* module, int32_t index, TesseraTensorInfo* info) {
  return api(TESSERA_ERROR_INVALID_ARGUMENT, [&] {
    if (require(module, "the module")->loaded.program)
      return describe(module->program_outputs[checked_index(index, module->num_outputs(), "output")], "output",
                      require(info, "the info pointer"));
    const auto& ex = *module->loaded.executor;
    describe(module, ex.plan().outputs[checked_index(index, ex.num_outputs(), "output")],
             require(info, "the info pointer"));
  });
}

TesseraStatus tessera_module_input_index(const TesseraModule* module, const char* name, int32_t* index) {
  return api(TESSERA_ERROR_INVALID_ARGUMENT, [&] {
    if (require(module, "the module")->loaded.program) {
      const std::string wanted = require(name, "the name");
      for (size_t i = 0; i < module->program_inputs.size(); ++i)
        if (module->program_inputs[i].name == wanted) {
          *require(index, "the index pointer") = static_cast<int32_t>(i);
          return;
        }
      invalid("the module has no input '" + wanted + "'");
    }
    const auto& ex = *module->loaded.executor;
    try {
      *require(index, "the index pointer") = static_cast<int32_t>(ex.input_index(require(name, "the name")));
    } catch (const tessera::Error& e) {
      invalid(e.what());
    }
  });
}

TesseraStatus tessera_module_set_input(TesseraModule* module, int32_t index, const TesseraTensor* value,
                                       TesseraInputMode mode) {
  return api(TESSERA_ERROR_INPUT_MISMATCH, [&] {
    size_t i = checked_index(index, require(module, "the module")->num_inputs(), "input");
    if (mode != TESSERA_COPY && mode != TESSERA_BORROW) invalid("invalid input mode " + std::to_string(mode));
    NDArray given = view_of(value);
    if (module->loaded.program) {  // its sizes checked against each other when the program runs
      check_declared(module->program_inputs[i], given);
      module->inputs_set[i] = mode == TESSERA_BORROW ? given : tessera::runtime::owned_copy(given);
      return;
    }
    auto& ex = *module->loaded.executor;
    if (mode == TESSERA_BORROW) {
      ex.set_input(i, given);
      return;
    }
    ex.check_input(i, given);
    NDArray copy = NDArray::empty(given.shape(), given.dtype());
    std::memcpy(copy.data(), given.data(), given.nbytes());
    ex.set_input(i, copy);
  });
}

TesseraStatus tessera_module_run(TesseraModule* module) {
  return api(TESSERA_ERROR_RUN, [&] {
    if (require(module, "the module")->loaded.program) return run_program(*module);
    auto& ex = *module->loaded.executor;
    ex.run();
    for (size_t i = 0; i < module->host_outputs.size(); ++i) {
      const NDArray& out = ex.output(i);
      NDArray& host = module->host_outputs[i];
      if (host.shape() != out.shape()) host = NDArray::empty(out.shape(), out.dtype());  // a symbolic plan's new size
      host.copy_from(out);
    }
  });
}

TesseraStatus tessera_module_get_output(const TesseraModule* module, int32_t index, TesseraTensor* out) {
  return api(TESSERA_ERROR_INVALID_ARGUMENT, [&] {
    size_t i = checked_index(index, require(module, "the module")->num_outputs(), "output");
    const NDArray& a = host_output(module, i);
    require(out, "the output pointer");
    out->data = a.data();
    out->dtype = to_c(a.dtype());
    out->ndim = a.ndim();
    out->shape = module->loaded.program ? a.shape().data() : module->loaded.executor->output_info(i).shape.data();
  });
}

TesseraStatus tessera_module_copy_output(const TesseraModule* module, int32_t index, void* dst, size_t nbytes) {
  return api(TESSERA_ERROR_INVALID_ARGUMENT, [&] {
    size_t i = checked_index(index, require(module, "the module")->num_outputs(), "output");
    const NDArray& a = host_output(module, i);
    if (nbytes < a.nbytes())
      invalid("output '" + output_name(module, i) + "' needs " + std::to_string(a.nbytes()) +
              " bytes, the buffer has " + std::to_string(nbytes));
    std::memcpy(require(dst, "the destination"), a.data(), a.nbytes());
  });
}

TesseraStatus tessera_npy_load(const char* path, TesseraArray** out) {
  return api(TESSERA_ERROR_IO, [&] {
    require(out, "the output pointer");
    *out = nullptr;
    auto a = std::make_unique<TesseraArray>();
    a->array = tessera::runtime::load_npy(require(path, "the path"));
    to_c(a->array.dtype());  // refuses a dtype the C API has no code for
    *out = a.release();
  });
}

TesseraStatus tessera_npy_save(const char* path, const TesseraTensor* tensor) {
  return api(TESSERA_ERROR_IO, [&] { tessera::runtime::save_npy(require(path, "the path"), view_of(tensor)); });
}

TesseraStatus tessera_array_view(const TesseraArray* array, TesseraTensor* out) {
  return api(TESSERA_ERROR_INVALID_ARGUMENT, [&] {
    const NDArray& a = require(array, "the array")->array;
    require(out, "the output pointer");
    out->data = a.data();
    out->dtype = to_c(a.dtype());
    out->ndim = a.ndim();
    out->shape = a.shape().data();
  });
}

void tessera_array_free(TesseraArray* array) { delete array; }

}  // extern "C"
