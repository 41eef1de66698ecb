//go:build linux

package main

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	bench "github.com/purecuda/purecuda/internal/benchrows"
	"github.com/purecuda/purecuda/libcuda"
)

//go:embed csrc/rounds.c
var roundsC []byte

// cRound compiles rounds.c into a shared library with cc and loads it into
// this process: a round of C's register and unregister that the rows
// "hostmem and C in alternate rounds" run between hostmem's rounds, on
// the same memory and thread. The library stays loaded; done removes its
// files.
func cRound(cc, libPath string) (r bench.Round, done func(), err error) {
	dir, err := os.MkdirTemp("", "purecuda-rounds-")
	if err != nil {
		return bench.Round{}, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			done()
		}
	}()
	src, so := filepath.Join(dir, "rounds.c"), filepath.Join(dir, "rounds.so")
	if err := os.WriteFile(src, roundsC, 0o644); err != nil {
		return bench.Round{}, nil, err
	}
	if out, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", so, src, "-ldl").CombinedOutput(); err != nil {
		return bench.Round{}, nil, fmt.Errorf("compiling rounds.c: %v\n%s", err, out)
	}
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return bench.Round{}, nil, err
	}
	var initC func(path string) int32
	var round func(bufs *unsafe.Pointer, k int32, n uintptr) int32
	purego.RegisterLibFunc(&initC, h, "pc_init")
	purego.RegisterLibFunc(&round, h, "pc_register_round")
	if initC(libPath) != 0 {
		return bench.Round{}, nil, fmt.Errorf("rounds.c: no cuMemHostRegister_v2 or cuMemHostUnregister in %s", libPath)
	}
	var bufs []unsafe.Pointer
	return bench.Round{Name: "C", Run: func(mems [][]byte, n int) error {
		// The buffers are pinned while C holds their addresses.
		var pin runtime.Pinner
		defer pin.Unpin()
		bufs = bufs[:0]
		for _, m := range mems {
			pin.Pin(&m[0])
			bufs = append(bufs, unsafe.Pointer(&m[0]))
		}
		pin.Pin(&bufs[0])
		if res := round(&bufs[0], int32(len(bufs)), uintptr(n)); res != 0 {
			return libcuda.Result(res)
		}
		return nil
	}}, done, nil
}
