package main

import (
	"fmt"
	"strings"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cufft"
	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/nvjitlink"
	"github.com/purecuda/purecuda/nvrtc"
)

// libraries prints, for each of NVIDIA's libraries that purecuda binds,
// the file it loads and its version, or that it found none (the first line
// of the load error; the rest says where it looked).
func libraries() {
	fmt.Println("libraries")
	row := func(name string, err error, path, version string) {
		if err != nil {
			first, _, _ := strings.Cut(err.Error(), "\n")
			fmt.Printf("  %-10s not loaded: %s\n", name, first)
			return
		}
		fmt.Printf("  %-10s %s, %s\n", name, version, path)
	}
	err := nvrtc.Load()
	l1, _ := nvrtc.Loaded()
	row("nvrtc", err, l1.Path, fmt.Sprintf("%d.%d", l1.Major, l1.Minor))
	err = nvjitlink.Load()
	l2, _ := nvjitlink.Loaded()
	row("nvjitlink", err, l2.Path, fmt.Sprintf("%d.%d", l2.Major, l2.Minor))
	err = cublas.Load()
	l3, _ := cublas.Loaded()
	row("cublas", err, l3.Path, dotted(l3.Version, 10000, 100))
	err = cublaslt.Load()
	l4, _ := cublaslt.Loaded()
	row("cublaslt", err, l4.Path, dotted(l4.Version, 10000, 100))
	err = curand.Load()
	l5, _ := curand.Loaded()
	row("curand", err, l5.Path, dotted(l5.Version, 1000, 100))
	err = cufft.Load()
	l6, _ := cufft.Loaded()
	row("cufft", err, l6.Path, dotted(l6.Version, 1000, 100))
}

// dotted spells a version number major*m1 + minor*m2 + patch as
// major.minor.patch.
func dotted(v, m1, m2 int) string {
	return fmt.Sprintf("%d.%d.%d", v/m1, v%m1/m2, v%m2)
}
