// comm_reduce.cu — the NCCL backend's local reduction step (comm_nccl.c): acc[i] op= x[i] on the
// backend's stream, in the same element order and arithmetic as the host loop in comm.c, so a
// reduce-scatter sums its partial blocks in rank-list order on the device too.
#include <cuda_runtime.h>
#include <stddef.h>

template <typename T, bool MAX> __global__ void comm_reduce_kernel(T *acc, const T *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        if (MAX)
            acc[i] = x[i] > acc[i] ? x[i] : acc[i];
        else
            acc[i] += x[i];
    }
}

// kind 0: float sum, 1: double sum, 2: double max (comm.c's red_kind). Returns a cudaError_t.
extern "C" int zg_cu_comm_reduce(int kind, void *acc, const void *x, size_t count, void *stream) {
    if (count == 0) return 0;
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    const unsigned blocks = (unsigned)((count + 255) / 256 < 4096 ? (count + 255) / 256 : 4096);
    switch (kind) {
    case 0:
        comm_reduce_kernel<float, false><<<blocks, 256, 0, st>>>(
            static_cast<float *>(acc), static_cast<const float *>(x), count);
        break;
    case 1:
        comm_reduce_kernel<double, false><<<blocks, 256, 0, st>>>(
            static_cast<double *>(acc), static_cast<const double *>(x), count);
        break;
    case 2:
        comm_reduce_kernel<double, true><<<blocks, 256, 0, st>>>(
            static_cast<double *>(acc), static_cast<const double *>(x), count);
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
