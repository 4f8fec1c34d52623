# find_package(Tessera): the runtime that loads exported modules, as Tessera::runtime (shared)
# and Tessera::runtime_static. Include <tessera_runtime.h> (C) or <tessera_runtime.hpp> (C++).
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include(${CMAKE_CURRENT_LIST_DIR}/TesseraTargets.cmake)
