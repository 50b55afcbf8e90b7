/**
 * What ONNX Runtime's CUDA execution provider needs, and the exact PyPI wheels that carry it.
 *
 * onnxruntime-node 1.30.0 does not ship its CUDA provider (its install script would fetch it from
 * NuGet); PyPI's onnxruntime-gpu 1.30.0 carries the same provider, a CUDA 13 build. The CUDA
 * libraries come from NVIDIA's own wheels of CUDA 13.0 Update 2 and cuDNN 9.13, which a driver
 * of the 580 series or newer runs. Each wheel is pinned by file name and sha256, so
 * `switchyard runtime pull cuda` installs exactly these bytes or nothing.
 */

export type Arch = "x64" | "arm64";

export interface PinnedWheel {
  package: string;
  version: string;
  arch: Arch;
  filename: string;
  sha256: string;
  size: number;
}

export interface CudaLibrary {
  /** The file's name, which is also the soname its dependants ask the dynamic linker for. */
  name: string;
  /** The wheel package that carries it. */
  package: string;
  /**
   * A symbol it exports, to dlopen it ahead of ONNX Runtime (bun:ffi needs one). Absent: it is
   * loaded later by its owner (the provider libraries, found next to libonnxruntime; cuDNN's
   * sub-libraries, found next to libcudnn).
   */
  symbol?: string;
}

/** In load order: each library's dependencies come before it. */
export const CUDA_LIBRARIES: readonly CudaLibrary[] = [
  { name: "libcudart.so.13", package: "nvidia-cuda-runtime", symbol: "cudaGetDeviceCount" },
  { name: "libcublasLt.so.13", package: "nvidia-cublas", symbol: "cublasLtCreate" },
  { name: "libcublas.so.13", package: "nvidia-cublas", symbol: "cublasCreate_v2" },
  { name: "libcufft.so.12", package: "nvidia-cufft", symbol: "cufftPlan1d" },
  { name: "libcurand.so.10", package: "nvidia-curand", symbol: "curandCreateGenerator" },
  { name: "libcudnn_graph.so.9", package: "nvidia-cudnn-cu13" },
  { name: "libcudnn_ops.so.9", package: "nvidia-cudnn-cu13" },
  { name: "libcudnn_cnn.so.9", package: "nvidia-cudnn-cu13" },
  { name: "libcudnn_adv.so.9", package: "nvidia-cudnn-cu13" },
  { name: "libcudnn_heuristic.so.9", package: "nvidia-cudnn-cu13" },
  { name: "libcudnn_engines_precompiled.so.9", package: "nvidia-cudnn-cu13" },
  { name: "libcudnn_engines_runtime_compiled.so.9", package: "nvidia-cudnn-cu13" },
  { name: "libcudnn.so.9", package: "nvidia-cudnn-cu13", symbol: "cudnnCreate" },
  { name: "libonnxruntime_providers_shared.so", package: "onnxruntime-gpu" },
  { name: "libonnxruntime_providers_cuda.so", package: "onnxruntime-gpu" },
];

/** The provider's own libraries: ONNX Runtime loads them from its own directory. */
export const PROVIDER_LIBRARIES = new Set(["libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"]);

export const CUDA_WHEELS: readonly PinnedWheel[] = [
  { package: "onnxruntime-gpu", version: "1.30.0", arch: "x64", filename: "onnxruntime_gpu-1.30.0-cp312-cp312-manylinux_2_28_x86_64.whl", sha256: "6acc0f4b3d5ac5f2984432faa59dd8fcce6775f8b43a7140afa0f322c7a703b1", size: 246685715 },
  { package: "onnxruntime-gpu", version: "1.30.0", arch: "arm64", filename: "onnxruntime_gpu-1.30.0-cp312-cp312-manylinux_2_34_aarch64.whl", sha256: "12af352b24145b3480794fcf327d313a240550e772a07fb182390872c1a642fc", size: 205731632 },
  { package: "nvidia-cuda-runtime", version: "13.0.96", arch: "x64", filename: "nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", sha256: "7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548", size: 2243632 },
  { package: "nvidia-cuda-runtime", version: "13.0.96", arch: "arm64", filename: "nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl", sha256: "ef9bcbe90493a2b9d810e43d249adb3d02e98dd30200d86607d8d02687c43f55", size: 2261060 },
  { package: "nvidia-cublas", version: "13.1.0.3", arch: "x64", filename: "nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl", sha256: "ee8722c1f0145ab246bccb9e452153b5e0515fd094c3678df50b2a0888b8b171", size: 423133236 },
  { package: "nvidia-cublas", version: "13.1.0.3", arch: "arm64", filename: "nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_aarch64.whl", sha256: "c86fc7f7ae36d7528288c5d88098edcb7b02c633d262e7ddbb86b0ad91be5df2", size: 542851226 },
  { package: "nvidia-cufft", version: "12.0.0.61", arch: "x64", filename: "nvidia_cufft-12.0.0.61-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", sha256: "6c44f692dce8fd5ffd3e3df134b6cdb9c2f72d99cf40b62c32dde45eea9ddad3", size: 214085489 },
  { package: "nvidia-cufft", version: "12.0.0.61", arch: "arm64", filename: "nvidia_cufft-12.0.0.61-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl", sha256: "2708c852ef8cd89d1d2068bdbece0aa188813a0c934db3779b9b1faa8442e5f5", size: 214053554 },
  { package: "nvidia-curand", version: "10.4.0.35", arch: "x64", filename: "nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_x86_64.whl", sha256: "1aee33a5da6e1db083fe2b90082def8915f30f3248d5896bcec36a579d941bfc", size: 59544258 },
  { package: "nvidia-curand", version: "10.4.0.35", arch: "arm64", filename: "nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_aarch64.whl", sha256: "133df5a7509c3e292aaa2b477afd0194f06ce4ea24d714d616ff36439cee349a", size: 61962106 },
  { package: "nvidia-cudnn-cu13", version: "9.13.0.50", arch: "x64", filename: "nvidia_cudnn_cu13-9.13.0.50-py3-none-manylinux_2_27_x86_64.whl", sha256: "2150b4850725d30653ec3e365f0732e3e2e3eb8633cf3bd2d3117628dea8b4f9", size: 348571624 },
  { package: "nvidia-cudnn-cu13", version: "9.13.0.50", arch: "arm64", filename: "nvidia_cudnn_cu13-9.13.0.50-py3-none-manylinux_2_27_aarch64.whl", sha256: "33f0aa0b64230101b348648fd0693342188071d3f8a137c0cf50051c24b3584b", size: 412337597 },
];

/** The package index `runtime pull` asks (its JSON API); SWITCHYARD_PYPI_URL names a mirror. */
export const DEFAULT_INDEX_URL = "https://pypi.org";

export function hostArch(): Arch | null {
  return process.platform === "linux" && (process.arch === "x64" || process.arch === "arm64") ? process.arch : null;
}
