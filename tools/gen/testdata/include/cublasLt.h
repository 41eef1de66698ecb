/* Fixture: cublasLt.h takes cuBLAS's status and types. */
#include <cublas_api.h>
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct { uint64_t data[8]; } cublasLtMatrixLayoutOpaque_t;
typedef cublasLtMatrixLayoutOpaque_t* cublasLtMatrixLayout_t;
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, cublasOperation_t op);
size_t cublasLtGetVersion(void);
