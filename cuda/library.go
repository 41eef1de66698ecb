package cuda

import (
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// Library is code loaded once for every context (cuLibraryLoadData, CUDA
// 12.0 and later): the driver loads it into a context when a module of it
// is asked for there (Module). A Library dropped without Close is
// unloaded by the garbage collector, and a warning is logged.
type Library struct {
	st      *libraryState
	cleanup runtime.Cleanup
}

type libraryState struct {
	raw    libcuda.Library
	log    string
	mu     gosync.Mutex
	closed bool
	mods   []*moduleState // the modules handed out, closed with the library
}

// LoadLibrary loads a library image (PTX, a cubin or a fatbin) for all
// contexts (cuLibraryLoadData), with LoadModule's JIT options; a refused
// image is a *JITError with the JIT's logs. It needs no context: the
// driver is initialised (cuInit) if it is not yet. A driver before CUDA
// 12.0 gives an error matching libcuda.ErrSymbol.
//
// A driver that loads lazily (CUDA_MODULE_LOADING=LAZY, the default since
// CUDA 12.2) may take an image it cannot compile here and refuse it only
// when the library is first used in a context (Library.Module) or a
// kernel is looked up.
func LoadLibrary(image []byte, opts ...ModuleOption) (*Library, error) {
	if len(image) == 0 {
		return nil, errors.New("cuda: LoadLibrary: empty image")
	}
	if err := libcuda.Init(0); err != nil {
		return nil, driverErr("cuInit", err)
	}
	if image[len(image)-1] != 0 && isText(image) {
		image = append(image[:len(image):len(image)], 0)
	}
	jc, err := newJITCall(opts)
	if err != nil {
		return nil, fmt.Errorf("cuda: LoadLibrary: %w", err)
	}
	var raw libcuda.Library
	n, ids, vals := jc.args()
	err = libcuda.LibraryLoadData(&raw, unsafe.Pointer(&image[0]), ids, vals, n, nil, nil, 0)
	jc.keepAlive()
	runtime.KeepAlive(image)
	if err != nil {
		return nil, jc.jitErr("cuLibraryLoadData", err)
	}
	ls := &libraryState{raw: raw}
	ls.log, _ = jc.logs()
	l := &Library{st: ls}
	l.cleanup = runtime.AddCleanup(l, func(ls *libraryState) {
		dropped("Library", "Close")
		if err := ls.close(); err != nil {
			logErr("unloading a dropped library", err)
		}
	}, ls)
	return l, nil
}

// Log is the JIT's info log of the library's load.
func (l *Library) Log() string {
	if l == nil || l.st == nil {
		return ""
	}
	return l.st.log
}

// Module gives the library's module in ctx (cuLibraryGetModule), loading
// it there if need be: its Funcs and Globals work as a loaded Module's.
// Its Close lets go of this Module value only; the code stays loaded
// until the Library's Close, which closes every Module it gave.
func (l *Library) Module(ctx *Context) (*Module, error) {
	if l == nil || l.st == nil {
		return nil, nilErr("Library", "Module")
	}
	ls := l.st
	cst, err := ctx.live("Library.Module")
	if err != nil {
		return nil, err
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil, closedErr("Library", "Module")
	}
	if !cst.tryRef() {
		return nil, closedErr("Context", "Library.Module")
	}
	var raw libcuda.Module
	var funcs []funcName
	err = cst.do(func() error {
		if err := libcuda.LibraryGetModule(&raw, ls.raw); err != nil {
			return driverErr("cuLibraryGetModule", err)
		}
		var lerr error
		funcs, lerr = listFuncs(raw)
		return lerr
	})
	if err != nil {
		return nil, errors.Join(err, cst.unref())
	}
	ms := &moduleState{ctx: cst, raw: raw, funcs: funcs, log: ls.log, fromLibrary: true}
	ls.mods = append(ls.mods, ms)
	return newModule(ms), nil
}

// Close closes the Modules the library gave, then unloads it from every
// context (cuLibraryUnload). Closing twice is an error matching
// ErrClosed.
func (l *Library) Close() error {
	if l == nil || l.st == nil {
		return nilErr("Library", "Close")
	}
	l.cleanup.Stop()
	return l.st.close()
}

func (ls *libraryState) close() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return closedErr("Library", "Close")
	}
	ls.closed = true
	var errs []error
	for _, ms := range ls.mods {
		if err := ms.close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	ls.mods = nil
	if err := libcuda.LibraryUnload(ls.raw); err != nil {
		errs = append(errs, driverErr("cuLibraryUnload", err))
	}
	return errors.Join(errs...)
}
