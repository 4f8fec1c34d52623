// Runtime facts Python needs: the thread pool's size and aligned array allocation.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"

namespace tessera::python {

void bind_runtime(py::module_& m) {
  m.def(
      "num_threads", [] { return runtime::ThreadPool::global().num_threads(); },
      "Threads that parallel loops run on (TESSERA_NUM_THREADS, else the core count).");
  m.def(
      "empty",
      [](std::vector<int64_t> shape, const std::string& dtype) {
        auto t = runtime::DataType::parse(dtype);
        auto owner = std::make_shared<runtime::NDArray>(runtime::NDArray::empty(shape, t));
        // The capsule keeps the aligned storage alive as long as the numpy array.
        py::capsule keep(new std::shared_ptr<runtime::NDArray>(owner),
                         [](void* p) { delete static_cast<std::shared_ptr<runtime::NDArray>*>(p); });
        return py::array(numpy_dtype(t), shape, owner->data(), keep);
      },
      py::arg("shape"), py::arg("dtype") = "float32",
      "A zero-filled numpy array of `shape` and `dtype` (\"float32\", \"int64\", \"bool\", ...) in 64-byte aligned "
      "memory, which kernels take without copying.");
}

}  // namespace tessera::python
