//go:build linux && (amd64 || arm64)

package cuda

import (
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Binding an M to the driver's callback thread.
//
// A thread that the Go runtime did not create enters Go (crosscall2, then
// runtime.cgocallback) on an M that it borrows for the call (needm: the
// signal mask, an alternate signal stack, a handful of system calls) and
// gives back on return (dropm: as many again), unless the runtime sees a
// pthread key made for the purpose (*_cgo_pthread_key_created != 0). Then
// it keeps the M bound to the thread after its first entry, records the
// M's g0 under the key (through _cgo_bindm), and the key's destructor gives
// the M back when the thread exits. runtime/cgo makes that key only in
// _cgo_wait_runtime_init_done, which only the C wrappers of exported
// functions call, and purego's fakecgo (CGO_ENABLED=0) never makes it: so
// without this file every host function run on the driver's thread pays
// needm and dropm.
//
// bindDriverThreads makes the key here, with a destructor of ours
// (hostDropM: crosscall2(nil, g0, 0, 0), which runtime.cgocallback reads
// as "drop the M of this g0", as runtime/cgo's pthread_key_destructor
// does), and points the runtime's _cgo_bindm at a function of ours
// (hostBindM: pthread_setspecific(key, g0)). fakecgo's own _cgo_bindm
// cannot be used: its trampoline jumps to a Go function that reads its
// argument from the stack while the runtime passes it in a register (the C
// convention), so it records a word of the system stack instead of the
// g0, and the destructor then handed that word to runtime.dropm, which
// crashed (SIGSEGV in dropm at the exit of every driver thread that had
// entered Go; see docs/history/ISSUE44.md).
//
// The key is the process's: every C thread that enters Go through
// crosscall2 from then on keeps its M until it exits, as the threads that
// call exported functions of a cgo program do.

//go:linkname runtimeKeyCreated _cgo_pthread_key_created
var runtimeKeyCreated *uintptr

//go:linkname runtimeBindM _cgo_bindm
var runtimeBindM uintptr

// hostMKey is the pthread key (hostBindM reads it); pthreadSetspecific is
// libc's pthread_setspecific (hostBindM calls it).
var hostMKey, pthreadSetspecific uintptr

// hostDropMABI0 and hostBindMABI0 are the addresses of hostDropM and
// hostBindM (hostcb_amd64.s, hostcb_arm64.s), C-callable.
var hostDropMABI0, hostBindMABI0 uintptr

// driverThreadsBound reports whether bindDriverThreads made the key.
var driverThreadsBound atomic.Bool

// bindDriverThreads makes the key, once, before the first host function
// is submitted, unless PURECUDA_BIND_DRIVER_THREADS is 0 or the runtime
// already has a key (a cgo program whose exported functions made
// runtime/cgo's). Failing that, entries borrow an M each, as before.
func bindDriverThreads() {
	if os.Getenv("PURECUDA_BIND_DRIVER_THREADS") == "0" || runtimeKeyCreated == nil || atomic.LoadUintptr(runtimeKeyCreated) != 0 {
		return
	}
	create, err := purego.Dlsym(purego.RTLD_DEFAULT, "pthread_key_create")
	if err != nil || create == 0 {
		return
	}
	set, err := purego.Dlsym(purego.RTLD_DEFAULT, "pthread_setspecific")
	if err != nil || set == 0 {
		return
	}
	var key uint32 // pthread_key_t: unsigned int
	if r, _, _ := purego.SyscallN(create, uintptr(unsafe.Pointer(&key)), hostDropMABI0); r != 0 {
		return
	}
	hostMKey, pthreadSetspecific = uintptr(key), set
	_, _ = hostMKey, pthreadSetspecific // read only by hostBindM
	runtimeBindM = hostBindMABI0
	atomic.StoreUintptr(runtimeKeyCreated, 1) // after the two above: a thread that sees it binds through them
	driverThreadsBound.Store(true)
}
