package cuda

// callerPC is the return address of the function that calls it, in that
// function's caller: for Stream.Launch, the place in the user's code that
// called Launch. It reads the frame pointer (amd64, arm64: Go keeps frame
// pointers there), costs two instructions and allocates nothing; the
// address is turned into file:line only when an error reports it
// (runtime.CallersFrames). Its caller must not be inlined and must have a
// frame of its own.
func callerPC() uintptr
