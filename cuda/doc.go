// Package cuda is the layer of purecuda a Go program starts from: devices,
// a context that carries itself, streams, events, typed device memory,
// copies, modules and kernel launches checked against the kernel's
// parameters, host functions and graph capture. No unsafe, no
// runtime.LockOSThread, no current context to manage.
//
//	devs, err := cuda.Devices()
//	ctx, err := devs[0].Context()         // the primary context, retained
//	defer ctx.Close()
//	s, err := ctx.NewStream()
//	defer s.Close()
//	mod, err := cuda.LoadModule(ctx, ptx) // PTX, cubin or fatbin
//	saxpy, err := mod.Func("saxpy")
//	x, err := cuda.Alloc[float32](s, n)   // stream-ordered
//	defer x.Free()
//	err = cuda.CopyToDevice(s, x, hostX)
//	err = s.Launch(saxpy, cuda.Grid(n/256, 1, 1), cuda.Block(256, 1, 1),
//		cuda.Int32(int32(n)), cuda.Float32(2), x.Arg(), y.Arg())
//	err = cuda.CopyToHost(s, hostY, y)    // into a []float32: waits
//
// # Values and their lifetimes
//
// A Context, Stream, Event and Module have a Close, and a Slice a Free.
// Use after Close or Free is an error (ErrClosed, ErrFreed), never a
// crash; closing races with calls in progress safely (Close waits for
// them). Values dropped without Close or Free are released by the garbage
// collector through runtime.AddCleanup, and a warning is logged once for
// each kind. Values made from a Context keep the driver's context alive
// until they are closed.
//
// # Locks
//
// Each Stream, Event, Module and allocation has a read-write lock: calls
// that use it hold it for reading, Close and Free for writing, which waits
// for the calls in progress. A call never waits for a read lock: when a
// Close or Free holds or awaits the lock, the call fails at once with
// ErrClosed or ErrFreed, as it would a moment later. So calls that use
// several values (a launch on a stream with Slices) cannot wait for each
// other in a circle; only Free waits, holding nothing, for one stream at
// a time.
//
// # Threads and the current context
//
// Every call that needs its Context current makes it current on a locked
// OS thread (see Context). A goroutine can use any value from any thread.
//
// # Memory
//
// Slice[T] is device memory of a pointer-free type T, allocated and freed
// in stream order from the device's memory pool. Free is ordered after the
// work of every stream that used the Slice: the streams are remembered as
// copies and launches are submitted, at no cost. The host side of a copy
// is a plain []T (pageable: the copy does not overlap with the host), or a
// *Pinned[T], a view of one (Pinned.Slice) or a *hostmem.Buffer (pinned:
// asynchronous, and recorded as a use of the buffer so that its release
// waits for the copy). A []T that lies inside a Pinned is taken for it.
// Lengths are checked: a mismatch or an out-of-range Slice is an error
// (ErrLength).
//
// Uses of a Slice on several streams are ordered by themselves: a read
// waits for the last write on another stream, a write for the last write
// and the reads since (see Slice, # Ordering across streams); one stream
// costs nothing more.
//
// # Launches
//
// Stream.Launch takes the kernel's arguments as Arg values (Int32,
// Float32, Value, Slice.Arg, Pinned.Arg, Buffer): their sizes are checked
// against the parameters the driver reports (cuFuncGetParamInfo, CUDA
// 12.4 and later), and a launch allocates nothing. A C++ kernel's
// arguments are also checked by type, against the parameter types its
// mangled name carries: a Slice[float32] only for float* or const float*,
// Int32 for int (not Uint32 nor Float32), Uint64 for unsigned long long
// and size_t, a struct Value only for a parameter of class type; the error
// names the parameter, its C++ type and the Go argument. An extern "C"
// kernel's name carries no types: its arguments are checked by size only.
// Module.Func finds a kernel by its extern "C" name, its mangled name or
// its C++ name (demangled by github.com/ianlancetaylor/demangle), and
// decides the check then, once.
//
// A struct that holds device pointers goes by value as Struct(fields...),
// laid out as C lays it out; its Slices are uses of their memory as
// arguments of their own are. A module's __device__ and __constant__
// variables are Slices too (Global), filled and read with the copies.
//
// # Libraries built on package cuda
//
// Packages that bind other libraries on these types (cublas, cublaslt)
// call them through Stream.Do: it holds the stream and the Slices given as
// Operands (each marked Read, Write or ReadWrite) for the call, makes the
// context current on a locked thread, gives the device addresses, and
// records the call as a use of each Slice, as a launch does. A value such
// a library makes on a stream (a handle) keeps the context with a
// ContextHold. Half and BFloat16 are the 16-bit element types they share
// (libtypes.Half and libtypes.BFloat16 under package cuda's names).
//
// # Graphs
//
// Stream.Capture records what a function submits into a Graph;
// Graph.Instantiate makes an Exec, launched with Stream.LaunchGraph and
// updated in place with Exec.Update; Stream.RunCached with a Cached
// captures and updates each run. These are package graph's values under
// package cuda's names, and CaptureMode's constants are the driver's
// capture modes, so that a program needs no other import for them.
//
// # Errors
//
// Errors from the driver name the call and wrap libcuda.Result. The common
// ones have sentinels here (ErrOutOfMemory, ErrInvalidValue, ErrNotReady,
// ErrCaptureInvalidated, ...): errors.Is(err, cuda.ErrOutOfMemory). Any
// other is errors.Is(err, libcuda.CUDA_ERROR_...).
//
// A kernel fault (an illegal address, a trap, a failed assert) loses the
// context, and the device with it, for the rest of the process: the
// driver reports it at some later call, maybe on another stream, and
// fails every call after. Package cuda turns the first report into a
// *LostError (matching ErrContextLost) that lists the launches that may
// have faulted, from each device's history of its last launches (kernel,
// shape, stream, the caller's file:line), and returns that same error at
// once from every later call on the device. PURECUDA_DEBUG=sync (or
// SetDebug(DebugSync)) makes each launch wait for its kernel, so that the
// fault is reported by exactly the launch that caused it; it is slow.
//
// # Other packages
//
// A program written against cuda (and nvrtc for run-time compilation)
// needs no other purecuda import. The packages underneath stay for those
// who want them: libcuda is the whole driver API; hostmem wraps Go memory
// for the GPU (Pin and AllocPinned are its Go-shaped form here, and a
// *hostmem.Buffer is a host side of copies as a *Pinned is); graph and
// sync are what Capture and the waits are made of.
package cuda
