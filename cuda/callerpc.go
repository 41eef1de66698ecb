package cuda

// callerPC is the return address of the function that calls it, in that
// function's caller: for Stream.Launch, the place in the user's code that
// called Launch. It reads the frame pointer (amd64, arm64: Go keeps frame
// pointers there), costs two instructions and allocates nothing; the
// address is turned into file:line only when an error reports it
// (runtime.CallersFrames). Its caller must not be inlined and must have a
// frame of its own.
func callerPC() uintptr

// curG identifies the calling goroutine: the address of the runtime's
// record of it (the g register on arm64, the thread's g slot on amd64).
// Two instructions, nothing allocated. The address is the goroutine's for
// as long as it runs, and may be given to a goroutine started after it
// has exited: compare it only with one noted by a call that is still on
// the goroutine's stack (see ctxState.inside).
func curG() uintptr
