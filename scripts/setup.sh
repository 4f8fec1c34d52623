# Shared set-up of demo.sh and test.sh: installs the Debian packages the build needs (only
# those missing), then builds Tessera in build/ with `pip install .` into build/venv. Sourced by
# them; run directly (bash scripts/setup.sh), it installs the Debian packages only: what
# `pip install .` needs on a fresh machine.

TESSERA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TESSERA_BUILD="${TESSERA_BUILD_DIR:-$TESSERA_ROOT/build}"
# Debian's interpreter: it has python3-numpy and python3-pytest; the python3 first on PATH may not.
TESSERA_PYTHON=/usr/bin/python3
# A venv over Debian's interpreter and its packages (torch, onnx, pytest) with numpy 2, the
# build's tools from PyPI (pybind11, scikit-build-core) and scipy and scikit-learn built for numpy 2
# (examples/train_digits.py): Tessera is installed into it as a user's environment would have it,
# and the tests run a second time there.
TESSERA_VENV="$TESSERA_BUILD/venv"

TESSERA_PACKAGES=(
  build-essential cmake ninja-build ccache
  gcc-aarch64-linux-gnu  # links modules cross-compiled for AArch64 (tessera compile -t "llvm -mtriple=aarch64-linux-gnu")
  g++-aarch64-linux-gnu libc6-dev-arm64-cross  # scripts/run_aarch64.sh cross-builds the runtime and the C example,
  qemu-user              # and runs AArch64 modules with them under emulation (tests/python/test_aarch64.py)
  llvm-14-dev
  nlohmann-json3-dev libgtest-dev libcli11-dev
  libsqlite3-dev         # the tuning database
  libxgboost-dev xgboost # the tuner's cost model (XGBoost's CMake package needs the xgboost CLI package too)
  libonnx-dev libprotobuf-dev python3-onnx libonnx-testdata
  python3-torch python3-torchvision
  python3-sklearn        # examples/train_digits.py: the digits dataset
  python3-dev python3-venv python3-numpy python3-pytest
  librsvg2-bin python3-pil  # the tuning report's plots rendered to pictures (tests/python/test_autotune.py)
  # OpenCL on the CPU (PoCL), for the runtime's OpenCL device and its tests. The runtime opens
  # libOpenCL.so.1 at run time; the headers give it the API's types, never a link.
  pocl-opencl-icd ocl-icd-libopencl1 opencl-headers ocl-icd-opencl-dev
)

ensure_packages() {
  local missing=()
  for p in "${TESSERA_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

ensure_venv() {
  [ -x "$TESSERA_VENV/bin/python" ] || "$TESSERA_PYTHON" -m venv --system-site-packages "$TESSERA_VENV"
  # pip 23.1 is the first to pass -C settings to the build backend (Debian's is 23.0).
  "$TESSERA_VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "pip>=23.1" "numpy>=2" "pybind11>=2.12" "scikit-build-core>=0.10" "scipy>=1.13" "scikit-learn>=1.4"
}

# One CMake tree serves everything: pip builds it in $TESSERA_BUILD with the GoogleTest suites
# (ctest; TESSERA_BUILD_TESTS=OFF leaves them out), build/python is the package for Debian's
# interpreter, and the wheel made from it is installed into the venv. Afterwards
# `cmake --build build` rebuilds as usual.
build_tessera() {
  ensure_venv
  echo "== building in $TESSERA_BUILD; installing the package into $TESSERA_VENV"
  # A tree configured before keeps its generator (scikit-build-core would choose Ninja).
  local generator
  generator="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$TESSERA_BUILD/CMakeCache.txt" 2>/dev/null || true)"
  CMAKE_GENERATOR="${generator:-Ninja}" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$TESSERA_VENV/bin/python" -m pip install -v --no-build-isolation --no-deps --disable-pip-version-check \
      -C build-dir="$TESSERA_BUILD" -C cmake.build-type="${TESSERA_BUILD_TYPE:-RelWithDebInfo}" \
      -C cmake.define.TESSERA_BUILD_TESTS="${TESSERA_BUILD_TESTS:-ON}" "$TESSERA_ROOT"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  ensure_packages
fi
