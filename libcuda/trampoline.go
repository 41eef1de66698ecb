//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package libcuda

import (
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// call runs the C function that f describes; the argument words follow f
// in memory (see frame).
func call(f *frame) { dl.Call((*dl.Frame)(unsafe.Pointer(f))) }

// callPinned is call for the entry points that return without waiting
// (see dl.CallPinned), callQueued for those that queue work on a stream
// (dl.CallQueued), callFence for the device-wide fences (dl.CallFence).
// tools/gen's library table says which is which.
func callPinned(f *frame) { dl.CallPinned((*dl.Frame)(unsafe.Pointer(f))) }

func callQueued(f *frame) { dl.CallQueued((*dl.Frame)(unsafe.Pointer(f))) }

func callFence(f *frame) { dl.CallFence((*dl.Frame)(unsafe.Pointer(f))) }

// callFloat is call for the functions with float or double arguments by
// value: f heads a block of dl.FloatFrame's layout (see dl.CallFloat).
func callFloat(f *frame) { dl.CallFloat((*dl.Frame)(unsafe.Pointer(f))) }

func pinQueued(on bool) bool { return dl.SetPinnedQueued(on) }
