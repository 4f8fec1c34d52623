#!/usr/bin/env bash
# Installs the benchmark peers: OpenBLAS for numpy and PyTorch from Debian; ONNX Runtime and
# Apache TVM from PyPI into benchmarks/.venv, a virtual environment over Debian's python3 that
# still sees its packages (numpy, torch, tessera's build). Run the benchmarks with
# benchmarks/.venv/bin/python, or /usr/bin/python3 for the Debian-only peers.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
packages=(libopenblas0-pthread python3-numpy python3-torch python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
if [ ! -x "$here/.venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$here/.venv"
fi
# TVM's ONNX importer needs a newer onnx than Debian's 1.12; inside the venv it shadows it. numpy
# stays below 2: Debian's torch is built against numpy 1 (Tessera reads both).
"$here/.venv/bin/python" -m pip install -q --upgrade onnxruntime apache-tvm onnx "numpy<2"
# HuggingFace's architectures for benchmarks/huggingface.py: 4.35.2 is the last release that runs
# on Debian's torch 1.13.
"$here/.venv/bin/python" -m pip install -q "transformers==4.35.2" "numpy<2"
# apache-tvm-ffi 0.1.15 segfaults serializing any TVM object (MetaSchedule does for every
# candidate); MetaSchedule's builder, runner and cost model need cloudpickle and xgboost.
"$here/.venv/bin/python" -m pip install -q "apache-tvm-ffi==0.1.14.post1" cloudpickle xgboost-cpu
echo "peers ready: $here/.venv/bin/python"
