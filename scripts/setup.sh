# Shared set-up of demo.sh and test.sh: installs the Debian packages the build needs (only
# those missing), then configures and builds Tessera in build/. Meant to be sourced.

TESSERA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TESSERA_BUILD="${TESSERA_BUILD_DIR:-$TESSERA_ROOT/build}"
# Debian's interpreter: it has python3-numpy and python3-pytest; the python3 first on PATH may not.
TESSERA_PYTHON=/usr/bin/python3

TESSERA_PACKAGES=(
  build-essential cmake ccache
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
  pybind11-dev python3-dev python3-numpy python3-pytest
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

build_tessera() {
  echo "== configuring and building in $TESSERA_BUILD"
  mkdir -p "$TESSERA_BUILD"
  cmake -S "$TESSERA_ROOT" -B "$TESSERA_BUILD" -DPython3_EXECUTABLE="$TESSERA_PYTHON" \
        -DCMAKE_BUILD_TYPE="${TESSERA_BUILD_TYPE:-RelWithDebInfo}" > "$TESSERA_BUILD/configure.log" 2>&1 \
    || { cat "$TESSERA_BUILD/configure.log"; return 1; }
  cmake --build "$TESSERA_BUILD" -j"$(nproc)"
}
