#!/usr/bin/env bash
# Runs a model cross-compiled for AArch64 (tessera compile -t "llvm -mtriple=aarch64-linux-gnu")
# on this x86-64 machine, under qemu user emulation, through the C deploy example:
#
#   scripts/run_aarch64.sh MODEL.so INPUT.npy [SCORES.npy]
#
# prints exactly what examples/deploy/classify prints on the host. The runtime and the example
# are cross-built once into $TESSERA_BUILD_DIR/aarch64 (build/aarch64) and rebuilt only when
# their sources change; build messages go to stderr, so stdout is the program's alone.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 MODEL.so INPUT.npy [more arguments of examples/deploy/classify]" >&2
  exit 2
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(realpath -m "${TESSERA_BUILD_DIR:-$ROOT/build}")/aarch64"
SYSROOT=/usr/aarch64-linux-gnu  # where Debian's cross packages put the AArch64 libc and libstdc++

need() {  # need PROGRAM-OR-FILE DEBIAN-PACKAGE
  if ! command -v "$1" > /dev/null && [ ! -e "$1" ]; then
    echo "run_aarch64.sh: $1 is missing; install it with: apt-get install $2" >&2
    exit 1
  fi
}
need cmake cmake
need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
need aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
need "$SYSROOT/lib/libc.so.6" libc6-dev-arm64-cross
need qemu-aarch64 qemu-user

# Writes stdin to FILE only if it differs: a rewritten CMakeLists.txt would make CMake configure again.
write_if_changed() {
  local tmp="$1.tmp"
  cat > "$tmp"
  if cmp -s "$tmp" "$1"; then rm "$tmp"; else mv "$tmp" "$1"; fi
}

build() {
  mkdir -p "$OUT/project"
  write_if_changed "$OUT/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH $SYSROOT)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L $SYSROOT)
EOF
  # runtime/CMakeLists.txt is a subdirectory of the whole project (which needs LLVM, pybind11,
  # ...): it takes Threads::Threads, the version and the include root from there. This project
  # gives it just those, so the runtime's own source list and settings are the ones built.
  local version
  version="$(sed -n 's/^project(Tessera VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
  write_if_changed "$OUT/project/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(Tessera VERSION ${version:-0} LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
find_package(Threads REQUIRED)
include_directories("$ROOT")  # the sources include "runtime/...h"
add_subdirectory("$ROOT/runtime" runtime)
EOF
  if [ ! -f "$OUT/cmake/CMakeCache.txt" ]; then
    cmake -S "$OUT/project" -B "$OUT/cmake" -DCMAKE_TOOLCHAIN_FILE="$OUT/toolchain.cmake" \
          -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_ARCHIVE_OUTPUT_DIRECTORY="$OUT/lib"
  fi
  cmake --build "$OUT/cmake" --target tessera_runtime_static -j"$(nproc)"
  # The runtime linked statically (README's one-line command): qemu then needs only the cross libc.
  aarch64-linux-gnu-gcc -O2 "$ROOT/examples/deploy/classify.c" -I"$ROOT/runtime" "$OUT/lib/libtessera_runtime.a" \
                        -lstdc++ -lm -pthread -o "$OUT/classify.tmp"
  mv "$OUT/classify.tmp" "$OUT/classify"
}

# Rebuilt when the runtime, the example or this script is newer than the program. The lock keeps
# two runs started together (pytest -n) from building over each other.
mkdir -p "$OUT"
exec 9> "$OUT/.lock"
flock 9
if [ ! -x "$OUT/classify" ] ||
   [ -n "$(find "$ROOT/runtime" "$ROOT/examples/deploy/classify.c" "${BASH_SOURCE[0]}" -newer "$OUT/classify" -print -quit)" ]; then
  echo "== cross-building the runtime and examples/deploy/classify.c for aarch64 in $OUT" >&2
  build > "$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 1; }
fi
exec 9>&-  # unlocks; the program need not hold it

exec qemu-aarch64 -L "$SYSROOT" "$OUT/classify" "$@"
