package tests

import (
	"context"
	"errors"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// FuzzWrap wraps sub-slices of one big slice at arbitrary offsets and
// lengths, as bytes or as int64s: each wrap is an error (ErrEmpty for no
// bytes) or a buffer the device can write through its device pointer, and
// its Free works. Never a crash.
func FuzzWrap(f *testing.F) {
	cu := testenv.PrimaryContext(f, 0)
	const size = 1 << 20
	big := make([]byte, size)
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
		defer cancel()
		testenv.Must(f, hostmem.Drain(ctx))
	})
	f.Add(uint32(0), uint32(4096), false, byte(1))
	f.Add(uint32(4095), uint32(2), false, byte(2))
	f.Add(uint32(8), uint32(0), true, byte(3))
	f.Add(uint32(size-8), uint32(1), true, byte(4))
	f.Fuzz(func(t *testing.T, off, n uint32, asInt64 bool, v byte) {
		o := int(off) % (size + 1)
		l := int(n) % (size - o + 1)
		var (
			b   *hostmem.Buffer
			err error
		)
		if asInt64 {
			o &^= 7
			var words []int64
			if o < size {
				words = unsafe.Slice((*int64)(unsafe.Pointer(&big[o])), (size-o)/8)
			}
			l = min(l/8, len(words))
			b, err = hostmem.Wrap(cu, words[:l])
			l *= 8
		} else {
			b, err = hostmem.Wrap(cu, big[o:o+l])
		}
		if l == 0 {
			if !errors.Is(err, hostmem.ErrEmpty) {
				t.Fatalf("Wrap of 0 bytes = %v, want ErrEmpty", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Wrap(%d bytes at %d) = %v", l, o, err)
		}
		if b.Size() != l {
			t.Fatalf("Size() = %d, want %d", b.Size(), l)
		}
		testenv.Must(t, libcuda.WithContext(cu, func() error {
			return libcuda.MemsetD8(b.DevicePtr(), v, uint64(l))
		}))
		for i, x := range big[o : o+l] {
			if x != v {
				t.Fatalf("byte %d of the %d wrapped at %d = %d, want %d", i, l, o, x, v)
			}
		}
		testenv.MustBounded(t, "b.Free", b.Free)
		// The next input's range may straddle this one's retired
		// registration; the driver's memset refuses a range over two
		// registrations (hostmem's doc, "Adjacent registrations"), so
		// each input starts from none.
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
		defer cancel()
		testenv.Must(t, hostmem.Drain(ctx))
	})
}
