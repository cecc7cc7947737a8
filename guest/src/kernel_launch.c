/* Launch extensions and the small context calls of api/kernels.api that the guest answers or
 * forwards itself: cooperative launches (a launch with the COOPERATIVE attribute), the cluster
 * occupancy queries over a CUlaunchConfig, cuCtxDetach, the deprecated texture/surface
 * references and the profiler calls. */
#include "ivc_api.h"
#include "ivc_internal.h"
#include "launch.h"
#include "log.h"

_Static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute as cuda.h lays it out");

static CUresult cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream stream, void **kernelParams, int ptsz)
{
    CUlaunchAttribute attribute;
    memset(&attribute, 0, sizeof attribute);
    attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attribute.value.cooperative = 1;
    CUlaunchConfig config = {gx, gy, gz, bx, by, bz, shared, stream, &attribute, 1};
    return ivc_launch_config(&config, f, kernelParams, ptsz);
}

IVC_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                              unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                              unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                              void **kernelParams)
{
    return cooperative(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                       kernelParams, 0);
}
IVC_ALIASES_cuLaunchCooperativeKernel

IVC_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                   unsigned int gridDimZ, unsigned int blockDimX,
                                                   unsigned int blockDimY, unsigned int blockDimZ,
                                                   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
{
    return cooperative(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                       kernelParams, 1);
}

static CUresult cluster_query(int *value, uint32_t query, CUfunction func, const CUlaunchConfig *config,
                              const char *name)
{
    if (value == NULL || config == NULL)
        return ivc_null_argument(name, value == NULL ? "value" : "config");
    if (config->numAttrs > IVC_MAX_LAUNCH_ATTRIBUTES || (config->numAttrs > 0 && config->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    return ivc_occupancy_cluster(value, query, func, config->gridDimX, config->gridDimY, config->gridDimZ,
                                 config->blockDimX, config->blockDimY, config->blockDimZ, config->sharedMemBytes,
                                 config->hStream, config->attrs, config->numAttrs * sizeof(CUlaunchAttribute));
}

IVC_EXPORT CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    return cluster_query(numClusters, 0, func, config, "cuOccupancyMaxActiveClusters");
}
IVC_ALIASES_cuOccupancyMaxActiveClusters

IVC_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config)
{
    return cluster_query(clusterSize, 1, func, config, "cuOccupancyMaxPotentialClusterSize");
}
IVC_ALIASES_cuOccupancyMaxPotentialClusterSize

IVC_EXPORT CUresult cuCtxDetach(CUcontext ctx)
{
    return cuCtxDestroy_v2(ctx);
}
IVC_ALIASES_cuCtxDetach

IVC_EXPORT CUresult cuModuleGetTexRef(void **pTexRef, CUmodule hmod, const char *name)
{
    (void)pTexRef;
    (void)hmod;
    ivc_log("cuModuleGetTexRef(%s): texture references are deprecated and not remoted (CUDA_ERROR_NOT_SUPPORTED)",
            name != NULL ? name : "NULL");
    return CUDA_ERROR_NOT_SUPPORTED;
}
IVC_ALIASES_cuModuleGetTexRef

IVC_EXPORT CUresult cuModuleGetSurfRef(void **pSurfRef, CUmodule hmod, const char *name)
{
    (void)pSurfRef;
    (void)hmod;
    ivc_log("cuModuleGetSurfRef(%s): surface references are deprecated and not remoted (CUDA_ERROR_NOT_SUPPORTED)",
            name != NULL ? name : "NULL");
    return CUDA_ERROR_NOT_SUPPORTED;
}
IVC_ALIASES_cuModuleGetSurfRef

/* Profiling runs on the host (nsys/ncu attach to the server): the guest's calls are no-ops. */
IVC_EXPORT CUresult cuProfilerInitialize(const char *configFile, const char *outputFile, int outputMode)
{
    (void)configFile;
    (void)outputFile;
    (void)outputMode;
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuProfilerInitialize

IVC_EXPORT CUresult cuProfilerStart(void)
{
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuProfilerStart

IVC_EXPORT CUresult cuProfilerStop(void)
{
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuProfilerStop
