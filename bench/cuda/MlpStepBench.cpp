//===- bench/cuda/MlpStepBench.cpp - GEMM-bound training step on one GPU -===//
//
//   mpc-bench-cuda [--layers L] [--width W] [--batch B] [--steps N]
//
// Trains an MLP of L dense W x W layers (relu between them, mse loss, SGD)
// with batch B on gpu:0 through the CUDA runtime and reports, for plain FP32
// and for the TF32 opt-in:
//   * cuBLAS's own SGEMM rate on the model's largest GEMM shape, measured in
//     the same run with CUDA events (the ceiling);
//   * the runtime's step time (steady state, host clock, one sync at the end)
//     and its achieved TFLOP/s counting the plan's matmul FLOPs;
//   * the sum of every instruction's kernel time measured in isolation, and
//     the runtime's overhead: step time minus that sum.
// Defaults: 4 x 4096, batch 2048, 20 steps. Then a launch-bound model (24 x
// 128, batch 32: hundreds of microsecond kernels), its step launched kernel
// by kernel against replayed as a CUDA graph (--cuda-graphs) in the same
// run, with the ratio and whether the two runs' losses agree bit for bit.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "runtime/Executor.h"
#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaDevice.h"
#include "support/Error.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

using namespace mpc;
using namespace mpc::runtime;

namespace {

struct Config {
  int layers = 4, width = 4096, batch = 2048, steps = 20;
};

std::string modelJson(const Config &c) {
  std::string w = std::to_string(c.width), b = std::to_string(c.batch);
  std::string params, nodes;
  std::string in = "x";
  for (int l = 0; l < c.layers; ++l) {
    std::string i = std::to_string(l);
    params += std::string(l ? "," : "") + "\"w" + i + "\": {\"shape\": [" + w + ", " + w +
              "], \"init\": {\"xavier\": {\"magnitude\": 1.0}}}, \"b" + i + "\": {\"shape\": [" +
              w + "], \"init\": {\"constant\": 0.0}}";
    nodes += std::string(l ? "," : "") + "{\"name\": \"h" + i +
             "\", \"op\": \"matmul\", \"inputs\": [\"" + in + "\", \"w" + i + "\"]}," +
             "{\"name\": \"a" + i + "\", \"op\": \"add\", \"inputs\": [\"h" + i + "\", \"b" + i +
             "\"]}";
    in = "a" + i;
    if (l + 1 < c.layers) {
      nodes += ",{\"name\": \"r" + i + "\", \"op\": \"relu\", \"inputs\": [\"a" + i + "\"]}";
      in = "r" + i;
    }
  }
  nodes += ",{\"name\": \"loss\", \"op\": \"mse_loss\", \"inputs\": [\"" + in + "\", \"y\"]}";
  return "{\"mpc\": 1, \"name\": \"mlp\", \"inputs\": {\"x\": {\"shape\": [" + b + ", " + w +
         "]}, \"y\": {\"shape\": [" + b + ", " + w + "]}}, \"params\": {" + params +
         "}, \"nodes\": [" + nodes +
         "], \"loss\": \"loss\", \"optimizer\": {\"sgd\": {\"lr\": 0.0001}}}";
}

plan::Plan compile(const Config &c) {
  passes::PassOptions options;
  options.devices = {"gpu:0"};
  return compiler::compileModel(modelJson(c), std::move(options), /*seed=*/1);
}

double matmulFlops(const plan::Plan &p) {
  double flops = 0;
  for (const plan::DeviceProgram &d : p.devices)
    for (const plan::Instr &in : d.instrs) {
      if (in.kind != plan::InstrKind::Kernel || in.op != "matmul") continue;
      const plan::Buffer &a = d.buffers[in.inputs[0]], &out = d.buffers[in.output];
      auto it = in.attrs.find("transpose_a");
      bool ta = it != in.attrs.end() && std::get<bool>(it->second);
      double k = double(ta ? a.shape[0] : a.shape[1]);
      flops += 2.0 * double(out.shape[0]) * double(out.shape[1]) * k;
    }
  return flops;
}

/// cuBLAS SGEMM rate (TFLOP/s) on C[m,n] = A[m,k] B[k,n], row-major.
double cublasRate(int m, int n, int k, bool tf32) {
  using cuda::cudaCheck;
  using cuda::cublasCheck;
  void *pa, *pb, *pc;
  cudaCheck(cudaMalloc(&pa, size_t(m) * k * 4), "cudaMalloc");
  cudaCheck(cudaMalloc(&pb, size_t(k) * n * 4), "cudaMalloc");
  cudaCheck(cudaMalloc(&pc, size_t(m) * n * 4), "cudaMalloc");
  float *a = static_cast<float *>(pa), *b = static_cast<float *>(pb), *c = static_cast<float *>(pc);
  cudaCheck(cudaMemset(a, 0, size_t(m) * k * 4), "cudaMemset");
  cudaCheck(cudaMemset(b, 0, size_t(k) * n * 4), "cudaMemset");
  cublasHandle_t h;
  cublasCheck(cublasCreate(&h), "cublasCreate");
  cublasCheck(cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
              "cublasSetMathMode");
  const float one = 1.f, zero = 0.f;
  auto gemm = [&] {
    cublasCheck(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n),
                "cublasSgemm");
  };
  for (int i = 0; i < 3; ++i) gemm();
  cudaEvent_t e0, e1;
  cudaCheck(cudaEventCreate(&e0), "cudaEventCreate");
  cudaCheck(cudaEventCreate(&e1), "cudaEventCreate");
  const int reps = 20;
  cudaCheck(cudaEventRecord(e0), "cudaEventRecord");
  for (int i = 0; i < reps; ++i) gemm();
  cudaCheck(cudaEventRecord(e1), "cudaEventRecord");
  cudaCheck(cudaEventSynchronize(e1), "cudaEventSynchronize");
  float ms = 0;
  cudaCheck(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 2.0 * m * n * k * reps / (double(ms) * 1e-3) / 1e12;
}

struct Timed {
  double stepMs;
  float first, last; ///< losses after the warm-up and at the end
};

/// c.steps steps after 3 warm-up ones, timed on the host clock with one sync.
Timed timeSteps(const Config &c, const plan::Plan &p, const cuda::CudaOptions &opts,
                std::vector<float> *kernelMs) {
  cuda::CudaRun run = cuda::prepareCudaRun(p, opts);
  std::shared_ptr<cuda::CudaRunInfo> info = run.info;
  Executor exec(p, run.factory, std::move(run.transport));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (const plan::TensorRef &t : p.inputs) {
    std::vector<float> v(size_t(t.numElements()));
    for (float &x : v) x = normal(rng);
    exec.write(t, v.data(), v.size() * 4);
  }
  for (int i = 0; i < 3; ++i) exec.step();
  float first = exec.loss();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < c.steps; ++i) exec.step();
  float last = exec.loss(); // the one sync of the timed loop
  double stepMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      c.steps;
  if (kernelMs) *kernelMs = info->backends[0]->timeKernels(5);
  return {stepMs, first, last};
}

void runConfig(const Config &c, const plan::Plan &p, bool tf32) {
  double ceiling = cublasRate(c.batch, c.width, c.width, tf32);
  cuda::CudaOptions opts;
  opts.allowTf32 = tf32;
  std::vector<float> kernelMs;
  auto [stepMs, first, last] = timeSteps(c, p, opts, &kernelMs);
  double kernelSum = 0;
  for (float ms : kernelMs) kernelSum += ms;
  double flops = matmulFlops(p);
  double achieved = flops / (stepMs * 1e-3) / 1e12;
  std::printf("  [%s] cublasSgemm %dx%dx%d: %.1f TFLOP/s\n", tf32 ? "TF32" : "FP32", c.batch,
              c.width, c.width, ceiling);
  std::printf("  [%s] runtime step: %.3f ms, %.1f TFLOP/s of matmul (%.0f%% of cublasSgemm); "
              "loss %.4g -> %.4g\n",
              tf32 ? "TF32" : "FP32", stepMs, achieved, 100.0 * achieved / ceiling,
              double(first), double(last));
  std::printf("  [%s] summed kernel time: %.3f ms over %zu instructions; runtime overhead "
              "%.3f ms/step (%.1f%%)\n",
              tf32 ? "TF32" : "FP32", kernelSum, kernelMs.size(), stepMs - kernelSum,
              100.0 * (stepMs - kernelSum) / stepMs);
}

/// The launch-bound model, launched and replayed, three rounds in turns.
void runGraphs(const Config &c) {
  plan::Plan p = compile(c);
  std::printf("  [graphs] MLP %d x %d, batch %d: %zu instructions per step\n", c.layers, c.width,
              c.batch, p.devices[0].instrs.size());
  cuda::CudaOptions launched, graphs;
  graphs.cudaGraphs = true;
  for (int round = 0; round < 3; ++round) {
    Timed a = timeSteps(c, p, launched, nullptr);
    Timed b = timeSteps(c, p, graphs, nullptr);
    bool same = std::memcmp(&a.last, &b.last, sizeof a.last) == 0 &&
                std::memcmp(&a.first, &b.first, sizeof a.first) == 0;
    std::printf("  [graphs] round %d: launched %.3f ms/step, graphs %.3f ms/step, "
                "launched/graphs %.2f; losses %s\n",
                round + 1, a.stepMs, b.stepMs, a.stepMs / b.stepMs,
                same ? "bit-identical" : "DIFFER");
  }
}

} // namespace

int main(int argc, char **argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    int v = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--layers")) c.layers = v;
    else if (!std::strcmp(argv[i], "--width")) c.width = v;
    else if (!std::strcmp(argv[i], "--batch")) c.batch = v;
    else if (!std::strcmp(argv[i], "--steps")) c.steps = v;
    else {
      std::fprintf(stderr, "usage: %s [--layers L] [--width W] [--batch B] [--steps N]\n", argv[0]);
      return 1;
    }
  }
  try {
    plan::Plan p = compile(c);
    std::printf("mpc-bench-cuda: MLP %d x %d, batch %d, %d steps on gpu:0; %.1f GFLOP of "
                "matmul per step, %zu instructions\n",
                c.layers, c.width, c.batch, c.steps, matmulFlops(p) / 1e9,
                p.devices[0].instrs.size());
    std::string why;
    if (!cuda::cudaAvailable(&why)) {
      std::printf("mpc-bench-cuda: skipped: %s\n", why.c_str());
      return 0;
    }
    cudaDeviceProp prop{};
    cuda::cudaCheck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    std::printf("  GPU 0: %s\n", prop.name);
    runConfig(c, p, false);
    runConfig(c, p, true);
    Config small;
    small.layers = 24;
    small.width = 128;
    small.batch = 32;
    small.steps = 200;
    runGraphs(small);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "mpc-bench-cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
