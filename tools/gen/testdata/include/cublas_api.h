/* Fixture: the shapes of cublas_api.h that the generator must handle. */
#ifndef CUBLASWINAPI
#define CUBLASWINAPI
#endif
#include "driver_types.h"
#include <library_types.h>
#define CUBLAS_VER_MAJOR 13
typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
struct cublasContext;
typedef struct cublasContext* cublasHandle_t;
typedef cudaDataType cublasDataType_t;
cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle);
size_t CUBLASWINAPI cublasGetCudartVersion(void);
void CUBLASWINAPI cublasXerbla(const char* srName, int info);
cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId);
cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, int m,
                                           const float* alpha, const float* A, int lda);
cublasStatus_t CUBLASWINAPI cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa, int64_t m,
                                              const float* alpha, const float* A, int64_t lda);
cublasStatus_t CUBLASWINAPI cublasHgemmBatched(cublasHandle_t handle, const __half* const Aarray[],
                                               cuComplex* z, cudaDataType Atype);
static inline cublasStatus_t cublasHelper(cublasHandle_t handle) { { return cublasCreate_v2(&handle); } }
