package libcuda

// PinQueued makes the calls that queue work on a stream (LaunchKernel,
// LaunchKernelEx, GraphLaunch, EventRecord, EventRecordWithFlags,
// StreamWaitEvent) pinned calls when on is true, or makes them through
// runtime.cgocall (the default) when it is false, and reports which they
// were; PURECUDA_PINNED=queued in the environment turns them on at start.
// See Pinned calls in the package documentation.
//
// A pinned call of these saves about as much as a pinned query (tens of
// nanoseconds a launch), but such a call finding the GPU's queue full (a
// thousand or so operations queued) waits for the GPU to make room while
// its goroutine holds its P, and a stop of the world (the collector's)
// waits for it in turn. Turn it on only where no queued work waits for Go
// code to run: no host function (cuLaunchHostFunc, graph host nodes,
// package cuda's Stream.HostFunc) and no wait for a value the program
// writes (cuStreamWaitValue32 and its kind) may be pending on the device.
// Otherwise a full queue behind such work and a collection can deadlock
// the process.
//
// On Windows every call goes through the runtime, and PinQueued reports
// false.
func PinQueued(on bool) (was bool) { return pinQueued(on) }
