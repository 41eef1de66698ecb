//go:build windows && amd64

package dl

// On Windows every call goes through runtime.cgocall: CallPinned and
// CallFence are Call.

// CallPinned is Call on Windows.
//
//go:nosplit
func CallPinned(f *Frame) { Call(f) }

// CallQueued is Call on Windows.
//
//go:nosplit
func CallQueued(f *Frame) { Call(f) }

// SetPinnedQueued reports false: there are no pinned calls on Windows.
func SetPinnedQueued(on bool) (was bool) { return false }

// CallFence is Call on Windows.
//
//go:nosplit
func CallFence(f *Frame) { Call(f) }

// SetPinned reports false: there are no pinned calls on Windows.
func SetPinned(on bool) (was bool) { return false }

// PinnedStacks reports 0 on Windows.
func PinnedStacks() int { return 0 }

// OnPinnedStack reports false on Windows.
func OnPinnedStack(addr uintptr) bool { return false }

// FencesInFlight reports 0 on Windows.
func FencesInFlight() int { return 0 }
