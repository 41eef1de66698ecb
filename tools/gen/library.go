package main

import (
	"fmt"
	"regexp"
	"strings"
)

// library is one NVIDIA library the generator serves: where its
// declarations come from, how its library file is found and told apart,
// and the Go package that binds it.
//
// The loader's columns (what, env, linux, windows, driver, linuxDirs,
// windowsDirs, pip, install, ident, version, versionKind, noLibrary,
// loadDoc, envExample) become the package's generated zload.go (EnvLibrary,
// ErrNoLibrary, ErrSymbol, Load, LoadError, Attempt and, for the libraries
// resolved by name, Library, Loaded and SymbolError) and the package's row
// of internal/dl/zlibraries.go, which internal/dl's one mechanism (Open,
// Lazy) reads. Adding a library is a row here plus its Go surface: no
// hand-written load*.go.
type library struct {
	pkg string // Go package's folder under the module root; its last element names it
	// local, where set, is the module's folder that holds headers (a test
	// fixture's), read instead of the -include folder.
	local   string
	headers []string // read in order; the first declares the types and functions

	// what names the library in messages and docs: "cuBLAS". Empty: a row
	// of types alone (libtypes), with no library file and no loader.
	what string
	// env is the environment variable that names the file to load; while
	// it is set, that file is the only place tried: "PURECUDA_LIBCUBLAS".
	env string
	// linux and windows are the file names on each system, newest first,
	// each written in full: a library's major version need not be the
	// toolkit's (CUDA 13 ships libcufft.so.12 and libcurand.so.10). List
	// an older release's names (CUDA 12's) where the API the package
	// calls is the same; a symbol that release lacks is a *SymbolError
	// from the one function that needs it. windows empty: NVIDIA ships
	// no Windows build (NCCL), and Load says so.
	linux, windows []string
	// driver: the library comes with the NVIDIA driver, not a toolkit
	// (libcuda, NVML). On Linux it is looked for through the dynamic
	// loader, then in linuxDirs; on Windows in System32, then in
	// windowsDirs (a leading %VARIABLE% is expanded; the folder is skipped
	// while it is unset), never through the DLL search path. A toolkit
	// library (driver false) is looked for through the dynamic loader, in
	// a toolkit's folders ($CUDA_PATH, /usr/local/cuda), conda's, and the
	// pip folders below in every Python site-packages found; on Windows in
	// %CUDA_PATH%\bin\x64, %CUDA_PATH%\bin, then the DLL search path.
	driver                 bool
	linuxDirs, windowsDirs []string
	// pip are the folders under site-packages/nvidia whose lib/ holds the
	// library in NVIDIA's pip wheels: "cu13" (CUDA 13's wheels put every
	// toolkit library there), "cublas" (the per-library wheels).
	pip []string
	// install says how to get the library, for the load error, as a
	// clause: "install a CUDA toolkit, or pip install nvidia-cublas".
	install string
	// ident are the symbols a file must export to be taken: a file that
	// opens without them is another library or another release
	// ("cublasCreate_v2"; nvJitLink's "__nvJitLinkCreate_13_0").
	ident []string
	// version is the C function that gives the library's version, called
	// once when the library is taken ("" for none); versionKind its shape,
	// which also shapes the package's Library and SymbolError:
	//	"int"        status f(int *v)                    Library.Version = v
	//	"majorMinor" status f(int *major, int *minor)    Library.Major, Minor
	//	"properties" status f(libraryPropertyType, int*) Library.Version = major*10000 + minor*100 + patch
	//	"return"     size_t f(void)                      Library.Version = what it returns
	version, versionKind string
	// noLibrary is the Go name of the sentinel a failed load matches;
	// empty: ErrNoLibrary (libcuda's is ErrNoDriver).
	noLibrary string
	// envExample is the path in EnvLibrary's doc comment; empty:
	// /usr/local/cuda/lib64/<first Linux name> for a toolkit library,
	// /usr/lib/x86_64-linux-gnu/<first Linux name> for a driver's.
	envExample string
	// loadDoc is a paragraph added to Load's doc comment.
	loadDoc string

	result string // the C status type the entry points return
	// errorText is the entry point that gives the library's own text for a
	// status (cuGetErrorString), which the status type's Error and
	// Description (zresult.go) use; empty: the library has none, and a
	// status's message is its name and number.
	errorText string
	// unreached is the status that call's stub returns where no library
	// can be loaded (zcall_other.go); a wrapper returns the load error
	// before it reaches call.
	unreached string
	// typePrefix matches the C type names whose Go name drops a prefix;
	// its group 1 is the rest, which becomes the Go name.
	typePrefix *regexp.Regexp
	funcPrefix string // dropped from function names: cuMemAlloc -> MemAlloc
	// byVersion: entry points are resolved through cuGetProcAddress by
	// base name and the ABI version of their PFN typedef in the second
	// header; otherwise they are looked up by their symbol's name.
	byVersion bool
	layout    bool // write zlayout_test.go, the table its layout test checks
	// rename gives the Go name of an entry point whose mechanical name
	// the package's hand-written API uses for something friendlier.
	rename map[string]string
	// uses lists the packages of the table whose types this library's
	// headers use (cuBLAS uses library_types.h's cudaDataType): their
	// headers are read first, their declarations are not written again,
	// and their types are spelled as that package names them
	// (libtypes.DataType). A package must come after those it uses.
	uses []string
	// prelude declares, in C, the types the headers take from headers
	// the generator does not read (driver_types.h's cudaStream_t,
	// cuda_fp16.h's __half); extern gives the Go type of each.
	prelude string
	extern  map[string]string
	// imports are the Go packages that extern's and uses' types name,
	// by package name.
	imports map[string]string
	// v2Names binds C's _v2 entry points under their base names, as
	// cublas_v2.h's #defines do (cublasSgemm_v2 -> Sgemm), and the 64-bit
	// index variants with a 64 suffix (cublasSgemm_v2_64 -> Sgemm64).
	v2Names bool
	// skip lists entry points left unbound, and skipPrefix those whose
	// symbols begin with it (nccl.h's pncclX, the profiling interface's
	// second name for each ncclX).
	skip       map[string]bool
	skipPrefix string
	// enumPrefix: enumerators whose C names begin with it drop it and
	// take an upper-case first letter (nccl.h's ncclSum -> Sum, which
	// would otherwise be unexported in Go); their String methods still
	// give the C names.
	enumPrefix string
	// typeRename gives the Go name of a C type whose mechanical name the
	// package's hand-written API uses for something else (nccl.h's
	// ncclComm_t would be Comm, the Go-shaped communicator; curand.h's
	// curandGenerator_t would be Generator).
	typeRename map[string]string
	// intResults lets entry points return an integer instead of the status
	// (cuBLAS's size_t cublasGetCudartVersion); elsewhere that is refused.
	intResults bool
	// pinned lists, by base name, the entry points whose wrappers make a
	// pinned call (internal/dl.CallPinned: no system-call bookkeeping, the
	// goroutine keeps its P): those that return without waiting, neither
	// for the GPU nor for Go code (a host function), and never call back
	// into Go. queued lists those that queue work on a stream: they return
	// once it is queued unless the GPU's queue is full, and then wait for
	// the GPU, which may wait for Go code; their wrappers make pinned calls
	// only where the program has asked for it (internal/dl.CallQueued).
	// fences lists those that stall the whole device while they run
	// (DESIGN.md's driver facts): their wrappers count themselves in
	// flight, and pinned calls meanwhile take the system-call path. Only
	// the driver (byVersion) has them: the package provides callPinned,
	// callQueued and callFence.
	pinned, queued, fences map[string]bool
}

// driverPinned are the driver's entry points made as pinned calls: the
// queries a wait makes, the current context and capture state that every
// layer asks, and the identity of streams and contexts. None waits for a
// running host function (tests' TestConformancePinnedCallsDoNotWaitForARunningHostFunction).
var driverPinned = set(
	"cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxPushCurrent", "cuCtxPopCurrent",
	"cuCtxGetDevice", "cuCtxGetId", "cuCtxGetFlags",
	"cuStreamQuery", "cuEventQuery",
	"cuStreamGetCtx", "cuStreamGetId", "cuStreamGetFlags", "cuStreamGetPriority",
	"cuStreamIsCapturing", "cuStreamGetCaptureInfo", "cuThreadExchangeStreamCaptureMode",
)

// driverQueued are the calls that queue work on a stream (a launch, a
// record, a wait on an event, a graph launch).
var driverQueued = set(
	"cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch",
	"cuEventRecord", "cuEventRecordWithFlags", "cuStreamWaitEvent",
)

// driverFences are the driver's entry points that wait for all the work in
// flight on the device and hold other threads' calls meanwhile (measured
// for cuMemHostUnregister, cuMemFreeHost and cuMemFree; the unloads and
// context teardowns free device memory the same way, and a module load
// was seen to wait for a running host function).
var driverFences = set(
	"cuMemHostUnregister", "cuMemFreeHost", "cuMemFree",
	"cuModuleUnload", "cuLibraryUnload", "cuCtxDestroy",
	"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxReset",
	"cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary",
	"cuLibraryLoadData", "cuLibraryLoadFromFile",
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// libraries drives the generator: one entry per generated package.
var libraries = []*library{
	{
		pkg:        "libcuda",
		unreached:  "CUDA_ERROR_NOT_SUPPORTED",
		headers:    []string{"cuda.h", "cudaTypedefs.h"},
		result:     "CUresult",
		errorText:  "cuGetErrorString",
		typePrefix: regexp.MustCompile(`^CU([a-z].*)$`),
		funcPrefix: "cu",
		byVersion:  true,
		layout:     true,
		pinned:     driverPinned,
		queued:     driverQueued,
		fences:     driverFences,

		what:        "CUDA driver",
		env:         "PURECUDA_LIBCUDA",
		linux:       []string{"libcuda.so.1"},
		windows:     []string{"nvcuda.dll"},
		driver:      true,
		linuxDirs:   []string{"/usr/lib/wsl/lib", "/usr/local/nvidia/lib64", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"},
		install:     "install the NVIDIA driver",
		ident:       []string{"cuDriverGetVersion"},
		version:     "cuDriverGetVersion",
		versionKind: "int",
		noLibrary:   "ErrNoDriver",
		envExample:  "/usr/lib64/libcuda.so.1",
		loadDoc:     "Load does not call cuInit; Init does.",
	},
	{
		pkg:        "nvrtc",
		unreached:  "NVRTC_ERROR_INTERNAL_ERROR",
		headers:    []string{"nvrtc.h"},
		result:     "nvrtcResult",
		errorText:  "nvrtcGetErrorString",
		typePrefix: regexp.MustCompile(`^nvrtc([A-Z].*)$`),
		funcPrefix: "nvrtc",
		rename:     map[string]string{"nvrtcVersion": "GetVersion"},

		what:        "NVRTC",
		env:         "PURECUDA_LIBNVRTC",
		linux:       []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"},
		windows:     []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll"},
		pip:         []string{"cu13", "cuda_nvrtc"},
		install:     "install a CUDA toolkit, or pip install nvidia-cuda-nvrtc",
		ident:       []string{"nvrtcVersion"},
		version:     "nvrtcVersion",
		versionKind: "majorMinor",
	},
	{
		// nvJitLink's entry points are versioned symbols (__nvJitLinkCreate_13_0)
		// behind static inline wrappers the generator skips; each is bound
		// under the wrapper's name.
		pkg:        "nvjitlink",
		unreached:  "NVJITLINK_ERROR_INTERNAL",
		headers:    []string{"nvJitLink.h"},
		result:     "nvJitLinkResult",
		typePrefix: regexp.MustCompile(`^nvJitLink([A-Z].*)$`),
		funcPrefix: "nvJitLink",
		rename: map[string]string{
			"__nvJitLinkCreate_13_0": "Create", "__nvJitLinkDestroy_13_0": "Destroy",
			"__nvJitLinkAddData_13_0": "AddData", "__nvJitLinkAddFile_13_0": "AddFile",
			"__nvJitLinkComplete_13_0":           "Complete",
			"__nvJitLinkGetLinkedCubinSize_13_0": "GetLinkedCubinSize",
			"__nvJitLinkGetLinkedCubin_13_0":     "GetLinkedCubin",
			"__nvJitLinkGetLinkedPtxSize_13_0":   "GetLinkedPtxSize",
			"__nvJitLinkGetLinkedPtx_13_0":       "GetLinkedPtx",
			"__nvJitLinkGetErrorLogSize_13_0":    "GetErrorLogSize",
			"__nvJitLinkGetErrorLog_13_0":        "GetErrorLog",
			"__nvJitLinkGetInfoLogSize_13_0":     "GetInfoLogSize",
			"__nvJitLinkGetInfoLog_13_0":         "GetInfoLog",
			"nvJitLinkVersion":                   "GetVersion",
		},

		// Only CUDA 13's names: CUDA 12's nvJitLink has other versioned symbols.
		what:        "nvJitLink",
		env:         "PURECUDA_LIBNVJITLINK",
		linux:       []string{"libnvJitLink.so.13", "libnvJitLink.so"},
		windows:     []string{"nvJitLink_130_0.dll"},
		pip:         []string{"cu13", "nvjitlink"},
		install:     "install a CUDA toolkit, or pip install nvidia-nvjitlink",
		ident:       []string{"__nvJitLinkCreate_13_0"},
		version:     "nvJitLinkVersion",
		versionKind: "majorMinor",
	},
	{
		pkg:        "nvml",
		unreached:  "NVML_ERROR_LIBRARY_NOT_FOUND",
		headers:    []string{"nvml.h"},
		result:     "nvmlReturn_t",
		errorText:  "nvmlErrorString",
		typePrefix: regexp.MustCompile(`^nvml([A-Z].*?)(?:_t)?$`),
		funcPrefix: "nvml",
		layout:     true,
		// Init and Shutdown are the package's reference-counted pair.
		rename: map[string]string{"nvmlInit": "RawInit", "nvmlInitWithFlags": "RawInitWithFlags", "nvmlShutdown": "RawShutdown"},

		what:        "NVML",
		env:         "PURECUDA_LIBNVML",
		linux:       []string{"libnvidia-ml.so.1"},
		windows:     []string{"nvml.dll"},
		driver:      true,
		linuxDirs:   []string{"/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"},
		windowsDirs: []string{`%ProgramW6432%\NVIDIA Corporation\NVSMI`},
		install:     "install the NVIDIA driver, which comes with NVML",
		ident:       []string{"nvmlInit_v2"},
		loadDoc:     "Loading does not initialize NVML: that is Init.",
	},
	{
		// The types of library_types.h that cuBLAS, cuBLASLt and the other
		// math libraries share; no library file of its own.
		pkg:        "libtypes",
		headers:    []string{"library_types.h"},
		typePrefix: regexp.MustCompile(`^(?:cuda)?([a-zA-Z].*)$`),
	},
	{
		pkg:        "cublas",
		unreached:  "CUBLAS_STATUS_NOT_INITIALIZED",
		headers:    []string{"cublas_api.h", "cublas_v2.h"},
		result:     "cublasStatus_t",
		errorText:  "cublasGetStatusString",
		typePrefix: regexp.MustCompile(`^cublas([A-Z].*?)(?:_t)?$`),
		funcPrefix: "cublas",
		uses:       []string{"libtypes"},
		prelude:    cudaPrelude,
		extern:     cudaExtern,
		imports:    cudaImports,
		v2Names:    true,
		skip:       map[string]bool{"cublasXerbla": true},
		// The typed GemmEx and GemmBatchedEx take these names.
		rename: map[string]string{"cublasGemmEx": "RawGemmEx", "cublasGemmEx_64": "RawGemmEx64",
			"cublasGemmBatchedEx": "RawGemmBatchedEx", "cublasGemmBatchedEx_64": "RawGemmBatchedEx64"},
		intResults: true,

		what:        "cuBLAS",
		env:         "PURECUDA_LIBCUBLAS",
		linux:       []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
		windows:     []string{"cublas64_13.dll", "cublas64_12.dll"},
		pip:         []string{"cu13", "cublas"},
		install:     "install a CUDA toolkit, or pip install nvidia-cublas",
		ident:       []string{"cublasCreate_v2"},
		version:     "cublasGetProperty",
		versionKind: "properties",
	},
	{
		pkg:        "cublaslt",
		unreached:  "cublas.CUBLAS_STATUS_NOT_INITIALIZED",
		headers:    []string{"cublasLt.h"},
		result:     "cublasStatus_t",
		typePrefix: regexp.MustCompile(`^cublasLt([A-Z].*?)(?:_t)?$`),
		funcPrefix: "cublasLt",
		uses:       []string{"libtypes", "cublas"},
		rename:     map[string]string{"cublasLtMatmul": "RawMatmul"}, // the typed Matmul takes the name
		prelude:    "typedef struct _IO_FILE FILE;",
		extern:     map[string]string{"FILE": "byte"},
		imports:    cudaImports,
		intResults: true,
		layout:     true,

		what:        "cuBLASLt",
		env:         "PURECUDA_LIBCUBLASLT",
		linux:       []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
		windows:     []string{"cublasLt64_13.dll", "cublasLt64_12.dll"},
		pip:         []string{"cu13", "cublas"},
		install:     "install a CUDA toolkit, or pip install nvidia-cublas",
		ident:       []string{"cublasLtCreate"},
		version:     "cublasLtGetVersion",
		versionKind: "return",
	},
	{
		// cuRAND 10 (CUDA 13 ships cuRAND 10.4): its file names follow
		// cuRAND's own major version, not the toolkit's.
		pkg:        "curand",
		unreached:  "CURAND_STATUS_NOT_INITIALIZED",
		headers:    []string{"curand.h"},
		result:     "curandStatus_t",
		typePrefix: regexp.MustCompile(`^curand([A-Z].*?)(?:_t)?$`),
		funcPrefix: "curand",
		uses:       []string{"libtypes"},
		prelude:    "typedef struct CUstream_st *cudaStream_t;",
		extern:     map[string]string{"cudaStream_t": "libcuda.Stream"},
		imports:    cudaImports,
		// The typed Generator takes the name.
		typeRename: map[string]string{"curandGenerator_t": "Handle"},

		what:        "cuRAND",
		env:         "PURECUDA_LIBCURAND",
		linux:       []string{"libcurand.so.10", "libcurand.so"},
		windows:     []string{"curand64_10.dll"},
		pip:         []string{"cu13", "curand"},
		install:     "install a CUDA toolkit, or pip install nvidia-curand",
		ident:       []string{"curandCreateGenerator"},
		version:     "curandGetVersion",
		versionKind: "int",
	},
	{
		// cuFFT 12 (CUDA 13 ships cuFFT 12.0): its file names follow
		// cuFFT's own major version, not the toolkit's.
		pkg:        "cufft",
		unreached:  "CUFFT_INTERNAL_ERROR",
		headers:    []string{"cufft.h"},
		result:     "cufftResult",
		typePrefix: regexp.MustCompile(`^cufft([A-Z].*?)(?:_t)?$`),
		funcPrefix: "cufft",
		uses:       []string{"libtypes"},
		// CUFFTAPI would be GCC's visibility attribute, which the parser
		// does not read: defined empty first.
		prelude: "#define CUFFTAPI\n" + cudaPrelude,
		extern:  cudaExtern,
		imports: cudaImports,
		rename:  map[string]string{"cufftCreate": "RawCreate"},

		what:        "cuFFT",
		env:         "PURECUDA_LIBCUFFT",
		linux:       []string{"libcufft.so.12", "libcufft.so"},
		windows:     []string{"cufft64_12.dll"},
		pip:         []string{"cu13", "cufft"},
		install:     "install a CUDA toolkit, or pip install nvidia-cufft",
		ident:       []string{"cufftMakePlanMany64"},
		version:     "cufftGetVersion",
		versionKind: "int",
	},
	{
		// NCCL, Linux only. The by-value ncclUniqueId of ncclCommInitRank
		// and ncclCommInitRankConfig (128 bytes) is passed as the call
		// path passes every struct above 16 bytes: in memory on the stack
		// on System V AMD64, as a pointer to a copy on arm64 (checked
		// against C by nccl's call-path test); a struct it could not pass
		// would make the generator refuse the entry point. The Go surface
		// uses ncclCommInitRankScalable, which takes the ids by pointer.
		pkg:        "nccl",
		unreached:  "InternalError",
		headers:    []string{"nccl.h"},
		result:     "ncclResult_t",
		errorText:  "ncclGetErrorString",
		typePrefix: regexp.MustCompile(`^nccl([A-Z].*?)(?:_t)?$`),
		funcPrefix: "nccl",
		enumPrefix: "nccl",
		// <limits.h>'s INT_MIN, which NCCL_CONFIG_UNDEF_INT names.
		prelude:    "typedef struct CUstream_st *cudaStream_t;\n#define INT_MIN (-2147483647 - 1)\n",
		extern:     map[string]string{"cudaStream_t": "libcuda.Stream"},
		imports:    cudaImports,
		layout:     true,
		skipPrefix: "pnccl",
		// ncclResetDebugInit returns void and is, by its own deprecation
		// note, no part of NCCL's API.
		skip:       map[string]bool{"ncclResetDebugInit": true},
		typeRename: map[string]string{"ncclComm_t": "Handle", "ncclUniqueId": "CUniqueID"},
		// The typed collectives of the Go surface take these names; the
		// C-shaped wrappers stay unexported beneath them.
		rename: map[string]string{"ncclAllReduce": "allReduce", "ncclBroadcast": "broadcast",
			"ncclReduce": "reduce", "ncclAllGather": "allGather", "ncclReduceScatter": "reduceScatter",
			"ncclAlltoAll": "alltoAll", "ncclGather": "gather", "ncclScatter": "scatter",
			"ncclSend": "send", "ncclRecv": "recv"},

		what:        "NCCL",
		env:         "PURECUDA_LIBNCCL",
		linux:       []string{"libnccl.so.2", "libnccl.so"},
		pip:         []string{"nccl", "cu13"},
		install:     "pip install nvidia-nccl-cu13 (PyTorch's wheels bring it), or NVIDIA's libnccl2 package",
		ident:       []string{"ncclCommInitRankScalable"},
		version:     "ncclGetVersion",
		versionKind: "int",
		envExample:  "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
		loadDoc:     "The identifying symbol, ncclCommInitRankScalable, is NCCL 2.23's and later's.",
	},
	callTest,
}

// callTest is the call-path fixture: internal/calltest's wrappers,
// generated from a header of C functions with the shapes of the float
// and double entry points (cuRAND's), which its tests build and call.
var callTest = &library{
	pkg:        "internal/calltest",
	local:      "internal/calltest/c",
	unreached:  "CALLTEST_BAD",
	headers:    []string{"calltest.h"},
	result:     "calltestStatus",
	typePrefix: regexp.MustCompile(`^calltest([A-Z].*)$`),
	funcPrefix: "calltest",

	what:    "call-path fixture",
	env:     "PURECUDA_LIBCALLTEST",
	linux:   []string{"libcalltest.so"},
	windows: []string{"calltest.dll"},
	install: "build c/calltest.c (internal/calltest's tests do)",
	ident:   []string{"calltestMixed"},
}

// cudaPrelude declares what cublas_api.h takes from driver_types.h,
// cuComplex.h, cuda_fp16.h and cuda_bf16.h, with the C layouts; cudaExtern
// gives their Go types: the driver's own stream handle, Go's complex
// types, and package cuda's 16-bit element types.
const cudaPrelude = `
typedef struct CUstream_st *cudaStream_t;
typedef struct float2 { float x; float y; } cuFloatComplex;
typedef struct double2 { double x; double y; } cuDoubleComplex;
typedef cuFloatComplex cuComplex;
typedef struct __half_s { unsigned short x; } __half;
typedef struct __nv_bfloat16_s { unsigned short x; } __nv_bfloat16;
`

var cudaExtern = map[string]string{
	"cudaStream_t":    "libcuda.Stream",
	"cuFloatComplex":  "complex64",
	"cuDoubleComplex": "complex128",
	"cuComplex":       "complex64",
	"__half":          "cuda.Half",
	"__nv_bfloat16":   "cuda.BFloat16",
}

var cudaImports = map[string]string{
	"cuda":     "github.com/purecuda/purecuda/cuda",
	"libcuda":  "github.com/purecuda/purecuda/libcuda",
	"libtypes": "github.com/purecuda/purecuda/libtypes",
	"cublas":   "github.com/purecuda/purecuda/cublas",
}

// libraryNamed finds a library of the table by its package name.
func libraryNamed(pkg string) (*library, error) {
	var names []string
	for _, l := range libraries {
		if l.pkg == pkg {
			return l, nil
		}
		names = append(names, l.pkg)
	}
	return nil, fmt.Errorf("no library %q; the generator knows %s", pkg, strings.Join(names, ", "))
}

// goName is the Go name of a C type name: with libcuda's prefix CUstream
// -> Stream, with nvrtc's nvrtcProgram -> Program; CUDA_* and other names
// keep their spelling.
func (l *library) goName(c string) string {
	if n, ok := l.typeRename[c]; ok {
		return n
	}
	if m := l.typePrefix.FindStringSubmatch(c); m != nil {
		return exported(m[1])
	}
	return c
}

// enumerator is the Go name of an enumerator: its C name, or, with the
// row's enumPrefix, the rest after it with an upper-case first letter.
func (l *library) enumerator(c string) string {
	if l.enumPrefix != "" {
		if rest, ok := strings.CutPrefix(c, l.enumPrefix); ok && rest != "" {
			return exported(rest)
		}
	}
	return c
}

// funcName is the Go name of a function symbol without its version
// suffix handling: the prefix dropped, the first letter upper case.
func (l *library) funcName(symbol string) string {
	if n, ok := l.rename[symbol]; ok {
		return n
	}
	name := strings.TrimPrefix(symbol, l.funcPrefix)
	if l.v2Names {
		name = strings.Replace(name, "_v2", "", 1)
		if n, ok := strings.CutSuffix(name, "_64"); ok {
			name = n + "64"
		}
	}
	if name == "" { // the symbol is the prefix alone, as "cu"
		name = symbol
	}
	return exported(name)
}

// files are the library's newest file names on Linux and Windows, for
// doc comments.
func (l *library) files() []string {
	var f []string
	for _, names := range [][]string{l.linux, l.windows} {
		if len(names) > 0 {
			f = append(f, names[0])
		}
	}
	return f
}

// header is the name of the header that declares the functions.
func (l *library) header() string { return l.headers[0] }
