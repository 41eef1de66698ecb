package cublas_test

import (
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// BenchmarkGemm64 is a 64x64 SGEMM through Gemm; BenchmarkGemm64Raw the
// same cuBLAS call through the generated function inside one Stream.Do:
// the difference is Gemm's own checks, locks and records a call. On the
// simulator the stand-in computes the product on the CPU, which hides
// that difference: there the Empty pair (m = n = k = 0: cuBLAS returns at
// once) shows it.
func BenchmarkGemm64(b *testing.B) {
	f := newFixture(b)
	a := upload(b, f.s, make([]float32, 64*64))
	c := upload(b, f.s, make([]float32, 64*64))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 64, 64, 64, 1, a, 64, a, 64, 0, c, 64); err != nil {
			b.Fatal(err)
		}
		if i%256 == 255 {
			testenv.Must(b, f.s.Sync(b.Context()))
		}
	}
	testenv.Must(b, f.s.Sync(b.Context()))
}

func BenchmarkGemm64Raw(b *testing.B) {
	f := newFixture(b)
	a := upload(b, f.s, make([]float32, 64*64))
	c := upload(b, f.s, make([]float32, 64*64))
	ops := [2]cuda.Operand{a.Operand(cuda.Read), c.Operand(cuda.ReadWrite)}
	one, zero := float32(1), float32(0)
	b.ReportAllocs()
	err := f.s.Do("bench", ops[:], func(libcuda.Stream) error {
		pa, pc := ops[0].Ptr(), ops[1].Ptr()
		A, C := *(**float32)(unsafe.Pointer(&pa)), *(**float32)(unsafe.Pointer(&pc))
		for i := 0; b.Loop(); i++ {
			if err := cublas.Sgemm(f.h.Raw(), cublas.NoTrans, cublas.NoTrans, 64, 64, 64, &one, A, 64, A, 64, &zero, C, 64); err != nil {
				return err
			}
			if i%256 == 255 {
				if err := libcuda.StreamSynchronize(f.s.Raw()); err != nil {
					return err
				}
			}
		}
		return libcuda.StreamSynchronize(f.s.Raw())
	})
	testenv.Must(b, err)
}

func BenchmarkGemmEmpty(b *testing.B) {
	f := newFixture(b)
	a := upload(b, f.s, make([]float32, 64*64))
	c := upload(b, f.s, make([]float32, 64*64))
	b.ReportAllocs()
	for b.Loop() {
		if err := cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 0, 0, 0, 1, a, 64, a, 64, 0, c, 64); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGemmEmptyRaw(b *testing.B) {
	f := newFixture(b)
	a := upload(b, f.s, make([]float32, 64*64))
	c := upload(b, f.s, make([]float32, 64*64))
	ops := [2]cuda.Operand{a.Operand(cuda.Read), c.Operand(cuda.ReadWrite)}
	one, zero := float32(1), float32(0)
	b.ReportAllocs()
	err := f.s.Do("bench", ops[:], func(libcuda.Stream) error {
		pa, pc := ops[0].Ptr(), ops[1].Ptr()
		A, C := *(**float32)(unsafe.Pointer(&pa)), *(**float32)(unsafe.Pointer(&pc))
		for b.Loop() {
			if err := cublas.Sgemm(f.h.Raw(), cublas.NoTrans, cublas.NoTrans, 0, 0, 0, &one, A, 64, A, 64, &zero, C, 64); err != nil {
				return err
			}
		}
		return nil
	})
	testenv.Must(b, err)
}
