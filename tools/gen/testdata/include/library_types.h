/* Fixture: the shape of library_types.h. */
#ifndef __LIBRARY_TYPES_H__
#define __LIBRARY_TYPES_H__
typedef enum cudaDataType_t {
    CUDA_R_16F = 2,
    CUDA_R_32F = 0,
    CUDA_R_64F = 1
} cudaDataType;
typedef enum libraryPropertyType_t { MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL } libraryPropertyType;
#ifndef __cplusplus
typedef enum cudaDataType_t cudaDataType_t;
#endif
#endif
