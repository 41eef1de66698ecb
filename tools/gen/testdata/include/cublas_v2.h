/* Fixture: cublas_v2.h renames the entry points to their _v2 symbols. */
#if !defined(CUBLAS_V2_H_)
#define CUBLAS_V2_H_
#include "cublas_api.h"
#define cublasCreate cublasCreate_v2
#define cublasSgemm cublasSgemm_v2
#define cublasSgemm_64 cublasSgemm_v2_64
#endif
