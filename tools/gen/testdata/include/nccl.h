/* A fixture in nccl.h's shape: what the nccl row of the table must handle. */
#ifndef NCCL_H_
#define NCCL_H_
#include <cuda_runtime.h>
#include <limits.h>
#define NCCL_MAJOR 2
#define NCCL_UNIQUE_ID_BYTES 128
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_UNDEF_FLOAT -1.0f
typedef struct ncclComm* ncclComm_t;
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;
typedef enum { ncclSuccess = 0, ncclInvalidArgument = 4, ncclInProgress = 7 } ncclResult_t;
typedef enum { ncclSum = 0, ncclAvg = 4 } ncclRedOp_t;
typedef struct ncclConfig_v22800 { size_t size; int blocking; const char *netName; } ncclConfig_t;
#define NCCL_CONFIG_INITIALIZER { sizeof(ncclConfig_t), NCCL_CONFIG_UNDEF_INT, NULL }
ncclResult_t  ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
const char*  ncclGetErrorString(ncclResult_t result);
__attribute__ ((deprecated("not part of the API")))
void  ncclResetDebugInit();
ncclResult_t  ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t  ncclGroupStart();
#endif
