package dl

import (
	"sync"
	"sync/atomic"
)

// Lazy is a library that a package opens on first use (its first call, or
// an explicit Load), and the entry points it resolves from it by name:
// every bound package keeps one (its generated zload.go declares it),
// which the generated procs (zproc.go) resolve through; libcuda resolves
// its own through cuGetProcAddress_v2.
type Lazy struct {
	open    func() (*Opened, error)
	missing func(l *Opened, symbol string) error
	mu      sync.Mutex
	v       atomic.Pointer[Opened]
	err     error // the last failure of a lazy load; guarded by mu
	symMu   sync.Mutex
	symErr  map[string]error // entry points that failed to resolve; guarded by symMu
}

// NewLazy returns a Lazy that opens its library with open; missing makes
// the error for a symbol it lacks (the package's *SymbolError), which
// Resolve remembers.
func NewLazy(open func() (*Opened, error), missing func(l *Opened, symbol string) error) *Lazy {
	return &Lazy{open: open, missing: missing}
}

// Load opens the library unless it is open, trying again after a failure.
func (l *Lazy) Load() (*Opened, error) {
	if v := l.v.Load(); v != nil {
		return v, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loadLocked()
}

// Get returns the open library, opening it on first use. A failure is
// remembered, so that calls without a library stay cheap; Load tries again.
func (l *Lazy) Get() (*Opened, error) {
	if v := l.v.Load(); v != nil {
		return v, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	return l.loadLocked()
}

func (l *Lazy) loadLocked() (*Opened, error) {
	if v := l.v.Load(); v != nil {
		return v, nil
	}
	v, err := l.open()
	if err != nil {
		l.err = err
		return nil, err
	}
	l.err = nil
	l.v.Store(v)
	return v, nil
}

// Loaded is the open library, or nil.
func (l *Lazy) Loaded() *Opened { return l.v.Load() }

// Store makes v the open library (nil: none), for tests that stand a
// fake library in.
func (l *Lazy) Store(v *Opened) {
	l.mu.Lock()
	l.v.Store(v)
	l.err = nil
	l.symMu.Lock()
	l.symErr = nil
	l.symMu.Unlock()
	l.mu.Unlock()
}

// SetFailure makes the next Get fail with err until a Load succeeds, as
// a failed lazy load does (for tests of the calls without a library).
func (l *Lazy) SetFailure(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
}

// Resolve returns the address of an entry point, opening the library if
// need be, and stores it in *addr (atomically) on the first success, so
// that the caller's fast path is one atomic load. A symbol the library
// lacks is an error from NewLazy's missing, remembered until Store.
func (l *Lazy) Resolve(addr *uintptr, symbol string) (uintptr, error) {
	v, err := l.Get()
	if err != nil {
		return 0, err
	}
	l.symMu.Lock()
	defer l.symMu.Unlock()
	if a := atomic.LoadUintptr(addr); a != 0 {
		return a, nil
	}
	if err := l.symErr[symbol]; err != nil {
		return 0, err
	}
	a, ok := v.Lib.Sym(symbol)
	if !ok {
		err := l.missing(v, symbol)
		if l.symErr == nil {
			l.symErr = map[string]error{}
		}
		l.symErr[symbol] = err
		return 0, err
	}
	atomic.StoreUintptr(addr, a)
	return a, nil
}
