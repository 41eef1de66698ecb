// Package hostmem makes Go host memory usable by the GPU and releases it
// only once the GPU is done with it.
//
// Wrap registers (page-locks and maps) a Go slice for the device and keeps
// the Go memory referenced and pinned (runtime.Pinner) until it is
// unregistered; Alloc does the same for pinned memory outside the Go heap
// (cuMemHostAlloc). Buffer.Use records that work just submitted to a stream
// uses the buffer; Buffer.Free returns at once and the release runs in the
// background: it waits for what was submitted to every stream the buffer
// was used on, then retires the registration. A caller that looks up the
// buffer's address, submits work and then calls Use holds the buffer
// across it (Buffer.Hold, Unhold after the Use), so that a Free racing the
// submission still waits for that work.
//
// Programs written against package cuda use its Pin and AllocPinned, the
// Go-shaped form of Wrap (a *cuda.Context instead of a libcuda.Context,
// uses recorded by the copies and launches themselves); this package is
// for those who call the driver through libcuda.
//
// # Waiting for the GPU
//
// A release waits for exactly the work that used the buffer: Use records
// an event on the stream, and one background goroutine, running only
// while releases are pending, waits for the events of freed buffers,
// a stream at a time in submission order. It looks at most about once a
// millisecond, however fast buffers are freed, so a release ends within a
// few milliseconds of its GPU work; Wait and Drain return once the
// releases they wait for have. Streams are told apart by their unique id
// (cuStreamGetId), never by a handle the driver may reuse.
// Stats.EventQueries and Stats.OwnerWakeups count what the background
// goroutine does. A steady loop of Wrap, Use and Free allocates one small
// Buffer a cycle and reuses everything else.
//
// # Retired registrations
//
// An unregister waits for all work in flight on the device, and
// registering costs far more than reusing a registration: so a release
// that has ended retires its registration instead of unregistering it.
// The memory stays registered, pinned and referenced; wrapping memory
// inside it again revives it at no cost. Retired registrations are
// unregistered in batches: when their bytes pass SetRetiredLimit's
// budget, on Trim and Drain, and after a release saw the whole context
// idle. Only once the unregister has returned is the Go memory unpinned
// and let go. The release is one state machine (wrapped, in use, freed,
// waiting for the GPU, retired, unregistering, gone; or failed, kept
// pinned), driven by one owner goroutine; Free, Wait, Trim, Drain and
// lease releases hand it work, and Wait and Drain return their context's
// error as soon as it ends, whatever is in flight.
//
// # Sharing registrations
//
// The driver refuses any byte overlap between registrations. Registrations
// are therefore shared: a wrap inside memory that is registered already
// (by a live, pending or retired registration) reuses it, and the part of
// a wrap not yet registered is registered beside what is. With unified
// addressing the device address of registered memory is its host address
// (CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM), so
// neighbouring registrations form one contiguous range for the GPU. Memory
// registered by someone else is used as it is and never unregistered here.
// On a device that reads pageable memory directly
// (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS), nothing is registered, but
// the memory is still kept alive until the GPU is done.
//
// # Capture
//
// Event queries and unregisters run in relaxed capture mode on a locked OS
// thread with the right context current, so a release never invalidates
// another goroutine's capture. A use on a stream that is being captured
// through package graph attaches a lease to the capture: the memory stays
// until the graph and every executable graph made from it are gone, or
// updated with another graph, and their launches have finished. A buffer
// makes its lease function once and leases it with graph.LeaseCounted: in
// a loop of graph.Cached runs whose captures Use the same buffers, the
// next run's lease stands for the one before, which the update releases
// at once, without a query of the launches; a Use inside a capture
// allocates nothing. Uses that cannot be tracked to a stream (no Use at
// all, or the legacy or per-thread stream while captures are in progress)
// need a wait for the whole context, which no capture allows: it is
// postponed (sync.Postpone) until the captures have ended. While a use
// records its event on the legacy or per-thread stream, no capture begins
// (sync.IfNoCapture). Captures begun directly through the driver cannot be
// seen.
//
// # Contexts
//
// A buffer's events and registrations belong to its context. When that is
// a device's primary context, hostmem holds it (cuDevicePrimaryCtxRetain)
// until the buffer's release and its registrations have ended, so a program
// may release its own hold early. Completed events are kept for reuse; a
// kept event holds its context too, and Drain lets them go. A context made
// with cuCtxCreate must outlive the releases of the buffers wrapped in it: destroyed earlier, the
// release may fail, logged. The driver drops a context's registrations
// when it destroys the context, and hostmem, which tells contexts apart by
// their unique id (cuCtxGetId, never reused) as well as their handle, lets
// them go too, unpinned: a wrap of that memory in another context
// registers it anew, and Drain has nothing left to unregister
// (Stats.Dropped counts them). In a context that a kernel fault has lost
// (libcuda.ErrContextLost) no query can tell when the GPU is done: the
// releases and unregisters fail, their memory stays registered and pinned
// for good, one error is logged for the context, and Wait and Drain
// return.
//
// # Failures
//
// A failure while releasing is logged through log/slog at level Error with
// the address, size and error, and the memory stays pinned and referenced
// for good rather than risk the GPU reading freed memory. A driver call that
// succeeded counts as done even where switching the thread's capture mode
// or context back failed after it (that failure is logged, or returned): a
// registration made is recorded and ended later, one ended is not kept.
//
// # Element types
//
// Wrap refuses a slice whose element type holds Go pointers: pointers,
// unsafe.Pointer, slices, strings, maps, channels, functions, interfaces,
// and structs or arrays with any of these inside. The GPU writes such
// memory without the garbage collector's write barriers and with values
// that are not Go pointers at all, which crashes the process later, inside
// the collector. Each element type is checked once (CheckElem) and the
// answer kept, so a wrap pays one map lookup for it.
//
// # Adjacent registrations
//
// A wrap of memory that several registrations cover side by side (for
// example two slices of one array wrapped separately, then the whole
// array) reuses those registrations as they are; it never merges them,
// which would unregister memory others may be using. With unified
// addressing (every 64-bit platform CUDA supports today) each registration
// is mapped at its host address, so the device sees the adjacent ranges as
// one run of memory and a kernel may read across their boundary. The
// conformance test TestConformanceKernelReadsAcrossAdjacentRegistrations
// checks this against the driver; the simulator behaves the same way. On a
// device that maps registered memory elsewhere, Wrap refuses such a range.
//
// Kernels are the only users that may cross the boundary: the driver's own
// copies and memsets (cuMemcpy*, cuMemsetD*) check that their range lies in
// one registration and return CUDA_ERROR_INVALID_VALUE for a Buffer that
// spans two. Buffer.Segment tells how far from an offset one registration
// goes, so that a copy can be made one segment at a time; package cuda's
// copies of a Buffer do that by themselves. Otherwise Drain or Trim before
// wrapping a range that straddles a retired registration.
//
// # Garbage collection
//
// A Buffer that becomes unreachable without Free is released the same way:
// its finalizer only hands its release to the background goroutine.
package hostmem
