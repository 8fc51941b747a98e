// How many clusters of a given size can be resident at once on this GPU, by dynamic shared memory per
// CTA (cudaOccupancyMaxActiveClusters on an empty kernel of 256 threads). A k split in a cluster
// (sm90raw KSPLIT) assumes its whole grid is resident in one wave; a cluster must fit inside one GPC,
// so at one CTA per SM the count of resident clusters can fall short of SMs / cluster size.
// Prints one JSON object. Not a timing: the occupancy calculator's answer for this device.
//   nvcc -arch=sm_90a -o co eval/cluster_occupancy.cu && ./co
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void empty_kernel() {}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    printf("{\"gpu\": \"%s\", \"sms\": %d, \"threads\": 256, \"max_active_clusters\": {", prop.name,
           prop.multiProcessorCount);
    const int sizes[] = {1, 2, 4, 8, 16};
    const int smem_kb[] = {16, 64, 96, 100, 112, 113, 120, 144, 200, 227};
    bool first = true;
    for (int c : sizes) {
        for (int kb : smem_kb) {
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute attr;
            attr.id = cudaLaunchAttributeClusterDimension;
            attr.val.clusterDim.x = c;
            attr.val.clusterDim.y = 1;
            attr.val.clusterDim.z = 1;
            cfg.gridDim = dim3(c * 64, 1, 1);
            cfg.blockDim = dim3(256, 1, 1);
            cfg.dynamicSmemBytes = size_t(kb) * 1024;
            cfg.attrs = &attr;
            cfg.numAttrs = 1;
            int n = -1;
            cudaError_t e = cudaOccupancyMaxActiveClusters(&n, empty_kernel, &cfg);
            if (e != cudaSuccess) { (void)cudaGetLastError(); n = -1; }
            printf("%s\"c%d_smem%dk\": %d", first ? "" : ", ", c, kb, n);
            first = false;
        }
    }
    printf("}}\n");
    return 0;
}
