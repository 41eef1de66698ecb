/* A fixture in the shape of nvrtc.h: an anonymous status enum, a handle,
   entry points resolved by name, one that returns a string, a function
   pointer parameter, and C++-only code behind macros that are not set. */
#ifndef __NVRTC_H__
#define __NVRTC_H__

#ifdef __cplusplus
extern "C" {
#endif

#include <stdlib.h>

typedef enum {
  NVRTC_SUCCESS = 0,
  NVRTC_ERROR_OUT_OF_MEMORY = 1,
  NVRTC_ERROR_COMPILATION = 6
} nvrtcResult;

const char *nvrtcGetErrorString(nvrtcResult result);
nvrtcResult nvrtcVersion(int *major, int *minor);

typedef struct _nvrtcProgram *nvrtcProgram;

nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
                               int numHeaders, const char * const *headers,
                               const char * const *includeNames);
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ptxSizeRet);
nvrtcResult nvrtcSetFlowCallback(nvrtcProgram prog, int (*callback)(void*, void*), void *payload);

#ifdef __cplusplus
}
#endif

#if NVRTC_GET_TYPE_NAME || __DOXYGEN_ONLY__
#include <string>
template <typename T> struct helper_t { };
inline nvrtcResult nvrtcGetTypeName(std::string *result) { return NVRTC_SUCCESS; }
#endif

#endif /* __NVRTC_H__ */
