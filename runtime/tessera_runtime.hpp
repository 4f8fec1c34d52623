// A thin, header-only C++ layer over the C API (tessera_runtime.h): owning handles that free
// themselves, and tessera::rt::Error (with the C status) instead of status codes.
//
//   tessera::rt::Module model("model.so");
//   tessera::rt::Array x = tessera::rt::Array::load_npy("x.npy");
//   model.set_input("x", x.tensor());
//   model.run();
//   std::vector<float> y = model.output<float>(0);
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera_runtime.h"

namespace tessera::rt {

class Error : public std::runtime_error {
 public:
  Error(TesseraStatus status, const std::string& message) : std::runtime_error(message), status_(status) {}
  TesseraStatus status() const { return status_; }

 private:
  TesseraStatus status_;
};

inline void check(TesseraStatus status) {
  if (status != TESSERA_OK) throw Error(status, tessera_last_error());
}

struct TensorInfo {
  std::string name;
  TesseraDType dtype;
  std::vector<int64_t> shape;
  size_t nbytes;
};

// An array the runtime allocated (64-byte aligned), e.g. read from a .npy file.
class Array {
 public:
  static Array load_npy(const std::string& path) {
    TesseraArray* a = nullptr;
    check(tessera_npy_load(path.c_str(), &a));
    return Array(a);
  }
  TesseraTensor tensor() const {
    TesseraTensor t;
    check(tessera_array_view(array_.get(), &t));
    return t;
  }
  std::vector<int64_t> shape() const {
    TesseraTensor t = tensor();
    return std::vector<int64_t>(t.shape, t.shape + t.ndim);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(tensor().data);
  }

 private:
  explicit Array(TesseraArray* a) : array_(a, &tessera_array_free) {}
  std::unique_ptr<TesseraArray, void (*)(TesseraArray*)> array_;
};

class Module {
 public:
  // On `device` ("opencl", "cuda:1"); empty: the CPU, or the first device of the module's kind.
  explicit Module(const std::string& path, const std::string& device = "") : module_(nullptr, &tessera_module_free) {
    TesseraModule* m = nullptr;
    check(device.empty() ? tessera_module_load(path.c_str(), &m)
                         : tessera_module_load_on(path.c_str(), device.c_str(), &m));
    module_.reset(m);
  }

  std::string target() const { return tessera_module_target(module_.get()); }
  std::string device() const { return tessera_module_device(module_.get()); }
  int num_inputs() const {
    int32_t n = 0;
    check(tessera_module_num_inputs(module_.get(), &n));
    return n;
  }
  int num_outputs() const {
    int32_t n = 0;
    check(tessera_module_num_outputs(module_.get(), &n));
    return n;
  }
  TensorInfo input(int index) const { return info(tessera_module_input_info, index); }
  TensorInfo output(int index) const { return info(tessera_module_output_info, index); }
  int input_index(const std::string& name) const {
    int32_t i = 0;
    check(tessera_module_input_index(module_.get(), name.c_str(), &i));
    return i;
  }

  // TESSERA_BORROW: `value`'s memory must outlive the next run (see tessera_module_set_input).
  void set_input(int index, const TesseraTensor& value, TesseraInputMode mode = TESSERA_COPY) {
    check(tessera_module_set_input(module_.get(), index, &value, mode));
  }
  void set_input(const std::string& name, const TesseraTensor& value, TesseraInputMode mode = TESSERA_COPY) {
    set_input(input_index(name), value, mode);
  }
  void run() { check(tessera_module_run(module_.get())); }

  // The module's own output memory: valid until the next run.
  TesseraTensor output_tensor(int index) const {
    TesseraTensor t;
    check(tessera_module_get_output(module_.get(), index, &t));
    return t;
  }
  // A copy of output `index`; T must match its dtype's size.
  template <typename T>
  std::vector<T> output(int index) const {
    TensorInfo i = output(index);
    if (i.nbytes % sizeof(T) != 0 || tessera_dtype_size(i.dtype) != sizeof(T))
      throw Error(TESSERA_ERROR_INVALID_ARGUMENT, "output '" + i.name + "' is " + tessera_dtype_name(i.dtype) +
                                                      ", not an array of " + std::to_string(sizeof(T)) +
                                                      "-byte elements");
    std::vector<T> out(i.nbytes / sizeof(T));
    check(tessera_module_copy_output(module_.get(), index, out.data(), i.nbytes));
    return out;
  }

 private:
  template <typename Query>
  TensorInfo info(Query query, int index) const {
    TesseraTensorInfo i;
    check(query(module_.get(), index, &i));
    return {i.name, i.dtype, std::vector<int64_t>(i.shape, i.shape + i.ndim), i.nbytes};
  }
  std::unique_ptr<TesseraModule, void (*)(TesseraModule*)> module_;
};

}  // namespace tessera::rt
