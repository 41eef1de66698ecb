//go:build linux

package bench

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// Fixture is what the call-overhead benchmarks use: device 0's primary
// context, current on the benchmarking thread, and an idle stream.
type Fixture struct {
	Dev    libcuda.Device
	Ctx    libcuda.Context
	Stream libcuda.Stream
	lib    uintptr // the driver library, opened again for the naive rows
}

// Setup initialises the driver and makes the fixture. Close releases it.
func Setup() (_ *Fixture, err error) {
	if err := libcuda.Init(0); err != nil {
		return nil, dl.Failed("", "cuInit", err)
	}
	f := &Fixture{}
	if err := libcuda.DeviceGet(&f.Dev, 0); err != nil {
		return nil, err
	}
	if err := libcuda.DevicePrimaryCtxRetain(&f.Ctx, f.Dev); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil { // what was made is let go
			err = errors.Join(err, f.Close())
		}
	}()
	err = libcuda.WithContext(f.Ctx, func() error {
		return libcuda.StreamCreate(&f.Stream, uint32(libcuda.CU_STREAM_NON_BLOCKING))
	})
	if err != nil {
		return nil, err
	}
	lib, _ := libcuda.Loaded()
	h, err := purego.Dlopen(lib.Path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, err
	}
	f.lib = h
	return f, nil
}

// Close destroys the stream, if there is one, and releases the context.
func (f *Fixture) Close() error {
	var err error
	if f.Stream != 0 {
		err = libcuda.WithContext(f.Ctx, func() error { return libcuda.StreamDestroy(f.Stream) })
	}
	return errors.Join(err, libcuda.DevicePrimaryCtxRelease(f.Dev))
}

// Row is one benchmark: an operation measured one way.
type Row struct {
	Op  string // what is measured, e.g. "cuCtxGetCurrent"
	Way string // how: "generated", "purego.SyscallN", "purego.RegisterFunc"
	F   func(b *testing.B)
	// Paired rows run Way and Other in alternate rounds, all their rounds
	// in one call of F whatever b.N is, and report the Metric* figures.
	Paired bool
	Other  string // the way a paired row compares Way with
}

// OnThread runs the body with the fixture's context current on a locked
// OS thread, as a caller of these functions would.
func (f *Fixture) OnThread(b *testing.B, body func(b *testing.B)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := libcuda.CtxSetCurrent(f.Ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	body(b)
}

func (f *Fixture) sym(b *testing.B, name string) uintptr {
	a, err := purego.Dlsym(f.lib, name)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// CallRows are the call-overhead rows: the generated wrapper against the
// two ways purego offers of calling the same C function.
func (f *Fixture) CallRows() []Row {
	return []Row{
		{Op: "cuCtxGetCurrent", Way: "generated", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				var c libcuda.Context
				for b.Loop() {
					if err := libcuda.CtxGetCurrent(&c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}},
		{Op: "cuCtxGetCurrent", Way: "purego.SyscallN", F: func(b *testing.B) {
			fn := f.sym(b, "cuCtxGetCurrent")
			f.OnThread(b, func(b *testing.B) {
				var c libcuda.Context
				for b.Loop() {
					if r, _, _ := purego.SyscallN(fn, uintptr(unsafe.Pointer(&c))); r != 0 {
						b.Fatal(libcuda.Result(r))
					}
				}
			})
		}},
		{Op: "cuCtxGetCurrent", Way: "purego.RegisterFunc", F: func(b *testing.B) {
			var get func(*libcuda.Context) int32
			purego.RegisterFunc(&get, f.sym(b, "cuCtxGetCurrent"))
			f.OnThread(b, func(b *testing.B) {
				var c libcuda.Context
				for b.Loop() {
					if r := get(&c); r != 0 {
						b.Fatal(libcuda.Result(r))
					}
				}
			})
		}},
		{Op: "cuStreamQuery (idle)", Way: "generated", F: func(b *testing.B) {
			f.OnThread(b, func(b *testing.B) {
				for b.Loop() {
					if err := libcuda.StreamQuery(f.Stream); err != nil {
						b.Fatal(err)
					}
				}
			})
		}},
		{Op: "cuStreamQuery (idle)", Way: "purego.SyscallN", F: func(b *testing.B) {
			fn := f.sym(b, "cuStreamQuery")
			f.OnThread(b, func(b *testing.B) {
				for b.Loop() {
					if r, _, _ := purego.SyscallN(fn, uintptr(f.Stream)); r != 0 {
						b.Fatal(libcuda.Result(r))
					}
				}
			})
		}},
		{Op: "cuStreamQuery (idle)", Way: "purego.RegisterFunc", F: func(b *testing.B) {
			var query func(libcuda.Stream) int32
			purego.RegisterFunc(&query, f.sym(b, "cuStreamQuery"))
			f.OnThread(b, func(b *testing.B) {
				for b.Loop() {
					if r := query(f.Stream); r != 0 {
						b.Fatal(libcuda.Result(r))
					}
				}
			})
		}},
	}
}
