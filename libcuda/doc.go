// Package libcuda is the CUDA driver API for Go, one function per entry
// point of cuda.h, with the driver library (libcuda.so.1, nvcuda.dll)
// opened at run time: no cgo, no CUDA toolkit to build.
//
// Most programs start from package cuda, which is built on this one;
// libcuda is the complete, C-shaped layer underneath for calls package
// cuda does not make.
//
// # Names and types
//
// Every CUresult function of cuda.h is a Go function named without its
// cu prefix and ABI suffix (cuMemAlloc_v2 is MemAlloc, cuStreamCreate is
// StreamCreate); handles, enums, #define constants and structs keep their
// C meaning under Go names (CUstream is Stream, CUdeviceptr is Deviceptr).
// These are generated from the CUDA headers by tools/gen into the z*.go
// files; each function's doc comment names the C symbol and its ABI
// version. Regenerate with go generate ./libcuda.
//
// # Loading
//
// The library is loaded on the first call, or by Load; $PURECUDA_LIBCUDA
// names a library to use instead of the system's (EnvLibrary). No driver
// makes every call return an error matching ErrNoDriver, with a *LoadError
// that lists the places tried. Entry points are resolved through
// cuGetProcAddress_v2 at the ABI version the binding was written for: an
// entry point the loaded driver lacks, or has only in an older ABI, makes
// that one function return a *SymbolError (matching ErrSymbol); everything
// else works.
//
// # Errors
//
// Result is CUresult and implements error: a call returns nil on
// CUDA_SUCCESS and the Result otherwise, without allocating, so that
// errors.Is(err, CUDA_ERROR_NOT_READY) and the like work and a poll stays
// cheap. PURECUDA_TRACE=1 (EnvTrace, SetTrace) logs every failed call
// except NOT_READY through log/slog.
//
// # Threads
//
// The driver keeps the current context per OS thread, and Go moves
// goroutines between threads. Calls that depend on the current context
// belong inside WithContext, which locks the thread, makes a context
// current and restores the thread's previous context afterwards.
//
// # Pinned calls
//
// A call from Go into C normally goes through the runtime's system-call
// bookkeeping (runtime.cgocall), so that a call that blocks gives up its
// processor (the runtime's P) and never holds up the garbage collector.
// That costs tens of nanoseconds a call, and beside a driver call that
// takes microseconds it costs more, in what it does to the caches. The entry
// points that return without waiting, neither for the GPU nor for Go code,
// are made as pinned calls instead: the calling goroutine keeps its P, and
// the C code runs on a stack that the package keeps for that P. These are
// the queries (StreamQuery, EventQuery), the current context and the
// capture state (CtxGetCurrent, CtxSetCurrent, StreamIsCapturing,
// StreamGetCaptureInfo, ThreadExchangeStreamCaptureMode, ...) and the
// identity of streams and contexts; each says so in its doc comment. A
// stop of the world (the collector's) waits for a pinned call to return.
//
// The calls that queue work on a stream (LaunchKernel, GraphLaunch,
// EventRecord, StreamWaitEvent, ...) return once the work is queued, but
// wait for the GPU when its queue is full; they are pinned only where
// PinQueued asks for it, which says when that is safe.
//
// A pinned call also waits while another thread runs a device-wide fence
// (MemHostUnregister, MemFree, MemFreeHost, the unloads and context
// teardowns, each marked a fence in its doc comment). While a fence made
// through this package is in flight, pinned calls go through
// runtime.cgocall as the others do; fences made by other code in the
// process (C code of its own) are not seen. PURECUDA_PINNED=0 in the
// environment makes every call go through runtime.cgocall. On Windows
// every call does.
//
// # Memory
//
// A function that takes a Go pointer reads or writes that memory only
// during the call, unless the driver's documentation says it keeps the
// address (cuMemHostRegister, asynchronous copies): memory the GPU uses after the call returns must stay
// pinned and alive until the GPU is done, which is what package hostmem is
// for.
package libcuda
