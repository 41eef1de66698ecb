//go:build !gpu && linux

package cuda_test

import (
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Within one process (the simulator; the driver's behaviour there is not
// measured): a pool exported and imported again maps the same memory at
// another address, so that what one Slice writes the other reads, both
// ways. Freeing the imported Slice and closing the imported pool leave the
// exporter's memory as it was.
func TestPoolIPCWithinAProcess(t *testing.T) {
	f := newFixture(t)
	d := f.ctx.Device()
	pool, err := cuda.NewMemPool(d, cuda.Exportable())
	testenv.Must(t, err)
	defer pool.Close()
	x, err := cuda.AllocFrom[int32](pool, f.s, 8)
	testenv.Must(t, err)
	testenv.Must(t, cuda.CopyToDevice(f.s, x, []int32{1, 2, 3, 4, 5, 6, 7, 8}))
	sync(t, f.s)
	// As the driver: no pointer of a pool not yet exported.
	if _, err := cuda.ExportPointer(x); err == nil {
		t.Error("ExportPointer before the pool's Export succeeded")
	}
	file, err := pool.Export()
	testenv.Must(t, err)
	ptr, err := cuda.ExportPointer(x)
	testenv.Must(t, err)
	imp, err := cuda.ImportMemPool(d, file)
	testenv.Must(t, err)
	testenv.Must(t, file.Close())
	if _, err := cuda.AllocFrom[int32](imp, f.s, 8); err == nil {
		t.Error("AllocFrom an imported pool succeeded")
	}
	y, err := cuda.ImportPointer[int32](imp, f.s, ptr)
	testenv.Must(t, err)
	if y.Len() != 8 {
		t.Fatalf("the imported Slice has %d elements, want 8", y.Len())
	}
	if got := read(t, f.s, y); !slices.Equal(got, []int32{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("through the imported pointer: %v", got)
	}
	testenv.Must(t, f.s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(8, 1, 1), y.Arg(), cuda.Uint64(8)))
	if got := read(t, f.s, x); !slices.Equal(got, []int32{2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("the exporter's Slice after a kernel on the imported one: %v", got)
	}
	testenv.Must(t, y.Free())
	sync(t, f.s)
	testenv.Must(t, imp.Close())
	if got := read(t, f.s, x); !slices.Equal(got, []int32{2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("the exporter's Slice after the importer let go: %v", got)
	}
	testenv.Must(t, x.Free())
	sync(t, f.s)
}
