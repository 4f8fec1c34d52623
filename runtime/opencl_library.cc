#include "runtime/opencl_library.h"

#include <dlfcn.h>

#include "runtime/error.h"
#include "runtime/load_once.h"

namespace tessera::runtime {

namespace {

OpenCLLibrary load() {
  // Never closed: OpenCL objects live until the process ends.
  void* handle = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail("no OpenCL driver found (libOpenCL.so.1 could not be loaded: ", dlerror(), ")");
  OpenCLLibrary lib;
#define TESSERA_LOAD(name)                                               \
  lib.name = reinterpret_cast<decltype(lib.name)>(dlsym(handle, #name)); \
  if (!lib.name) fail("libOpenCL.so.1 lacks ", #name, ": Tessera needs an OpenCL 2.0 or newer ICD loader");
  TESSERA_OPENCL_FUNCTIONS(TESSERA_LOAD)
#undef TESSERA_LOAD
  return lib;
}

}  // namespace

const OpenCLLibrary& opencl_library() {
  static LoadOnce<OpenCLLibrary> once;
  return once.get(load);
}

std::string opencl_error_str(cl_int code) {
  const char* name = nullptr;
  switch (code) {
#define TESSERA_CASE(c) \
  case c:               \
    name = #c;          \
    break;
    TESSERA_CASE(CL_DEVICE_NOT_FOUND)
    TESSERA_CASE(CL_DEVICE_NOT_AVAILABLE) TESSERA_CASE(CL_COMPILER_NOT_AVAILABLE)
        TESSERA_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE) TESSERA_CASE(CL_OUT_OF_RESOURCES)
            TESSERA_CASE(CL_OUT_OF_HOST_MEMORY) TESSERA_CASE(CL_BUILD_PROGRAM_FAILURE) TESSERA_CASE(CL_INVALID_VALUE)
                TESSERA_CASE(CL_INVALID_DEVICE) TESSERA_CASE(CL_INVALID_CONTEXT) TESSERA_CASE(CL_INVALID_COMMAND_QUEUE)
                    TESSERA_CASE(CL_INVALID_MEM_OBJECT) TESSERA_CASE(CL_INVALID_BUFFER_SIZE)
                        TESSERA_CASE(CL_INVALID_PROGRAM) TESSERA_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
                            TESSERA_CASE(CL_INVALID_KERNEL_NAME) TESSERA_CASE(CL_INVALID_KERNEL)
                                TESSERA_CASE(CL_INVALID_ARG_INDEX) TESSERA_CASE(CL_INVALID_ARG_VALUE)
                                    TESSERA_CASE(CL_INVALID_ARG_SIZE) TESSERA_CASE(CL_INVALID_KERNEL_ARGS)
                                        TESSERA_CASE(CL_INVALID_WORK_DIMENSION) TESSERA_CASE(CL_INVALID_WORK_GROUP_SIZE)
                                            TESSERA_CASE(CL_INVALID_WORK_ITEM_SIZE)
                                                TESSERA_CASE(CL_INVALID_GLOBAL_WORK_SIZE) TESSERA_CASE(CL_INVALID_EVENT)
                                                    TESSERA_CASE(CL_INVALID_OPERATION)
                                                        TESSERA_CASE(CL_INVALID_BUILD_OPTIONS)
                                                            TESSERA_CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
#undef TESSERA_CASE
                                                                case -1001 : name = "CL_PLATFORM_NOT_FOUND_KHR";
    break;  // the ICD loader found no driver
  }
  return (name ? std::string(name) : "OpenCL error") + " (" + std::to_string(code) + ")";
}

}  // namespace tessera::runtime
