//go:build linux && (amd64 || arm64)

package cuda

import "unsafe"

// hostCallbackABI0 is the address of the C-callable host function
// (hostcb_amd64.s, hostcb_arm64.s): it passes the driver's user data, a
// *hostEntry, to hostCallbackGo through the runtime's entry from C
// (crosscall2, then runtime.cgocallback), with no reflection and nothing
// allocated on the way. Once bindDriverThreads has made the runtime's
// pthread key (hostbind_sysv.go), the runtime keeps an M bound to the
// driver's callback thread after its first entry, so later entries do not
// borrow one.
var hostCallbackABI0 uintptr

// hostCallbackGoCall holds hostCallbackGo as a func value: the assembly
// reads the function's Go entry point through it.
var hostCallbackGoCall = hostCallbackGo

// hostCallbackGo runs on the driver's callback thread, entered from C.
func hostCallbackGo(frame unsafe.Pointer) { hostTrampoline((*hostEntry)(frame)) }

// newHostCallback returns the C-callable host function.
func newHostCallback() uintptr {
	bindDriverThreads()
	_ = hostCallbackGoCall // read only by the assembly
	return hostCallbackABI0
}
