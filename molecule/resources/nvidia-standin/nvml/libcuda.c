/*
 * STAND-IN FOR TESTS -- not NVIDIA's libcuda.so.1.
 *
 * A driver installation puts libcuda.so.1 beside libnvidia-ml.so.1, and tools
 * find the driver's library directory by it (udocker setup --nvidia looks for
 * libcuda / libnvidia-cfg through ldconfig, then copies every driver library
 * of that directory into the container). The test bed has no GPU: every call
 * answers CUDA_ERROR_NO_DEVICE, which is what CUDA says on a node whose
 * devices are gone.
 */
#define CUDA_ERROR_NO_DEVICE 100
#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;

EXPORT CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_ERROR_NO_DEVICE;
}

EXPORT CUresult cuDriverGetVersion(int *version)
{
    (void)version;
    return CUDA_ERROR_NO_DEVICE;
}
