#!/usr/bin/env bash
# Installs the Debian packages mpc needs to build and test, if any is missing.
# The CUDA toolkit is optional and not installed here: when /usr/local/cuda is
# present the CUDA runtime is built too.
set -euo pipefail

packages=(
  cmake g++ make python3
  nlohmann-json3-dev   # JSON model format, plan.bin's CBOR part, safetensors header
  libcli11-dev         # command-line parsing
  libopenblas-dev      # cblas_sgemm for the CPU runtime
  libgtest-dev         # unit tests
  libbenchmark-dev     # bench/
  llvm-14-tools        # FileCheck, not, split-file, lit
  clang libclang-rt-14-dev      # libFuzzer, ASan and UBSan for scripts/fuzz.sh
  python3-numpy python3-torch   # the PyTorch cross-checks (test/torch/)
  graphviz             # dot, for pictures of graphs
  openmpi-bin libopenmpi-dev    # mpirun and MPI for multi-process runs
  fortunes fortunes-min         # text for the GPT example (examples/gpt/)
  dataset-fashion-mnist         # images for the CNN example (examples/fashion-mnist/)
  libjemalloc-dev               # the mpc tool's allocator (MPC_ALLOCATOR, docs/passes.md)
  libonnx-dev libprotobuf-dev   # mpc import-onnx: ONNX's protobuf classes, checker, shape inference
  libonnx-testdata python3-onnx # the ONNX backend node tests (test/onnx/conformance.py)
)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "mpc: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
