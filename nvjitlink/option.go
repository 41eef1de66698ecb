package nvjitlink

import (
	"fmt"
	"strings"
)

// Option is one of nvJitLink's options for Link, made by the functions
// below (Optimize, LineInfo, PTXOutput, ...) rather than written as a
// string; Flag passes one they do not cover. The zero Option adds nothing.
type Option struct {
	flag string // "" for none
	err  error  // an option that cannot be made
}

// String is the option as nvJitLink reads it ("-O3").
func (o Option) String() string { return o.flag }

// Flag passes an option of nvJitLink's as it is written ("-Xptxas=-v"),
// for one that no function here makes.
func Flag(s string) Option {
	if s == "" || strings.IndexByte(s, 0) >= 0 {
		return Option{err: fmt.Errorf("nvjitlink: option %q", s)}
	}
	return Option{flag: s}
}

// Optimize sets the optimization level of the link's code generation,
// 0 to 3 (-O; 3 by default).
func Optimize(level int) Option {
	if level < 0 || level > 3 {
		return Option{err: fmt.Errorf("nvjitlink: Optimize(%d): the level is 0 to 3", level)}
	}
	return Option{flag: fmt.Sprintf("-O%d", level)}
}

// LineInfo keeps the source line of each instruction, for profilers
// (-lineinfo).
func LineInfo() Option { return Option{flag: "-lineinfo"} }

// Debug makes code for the debugger (-g).
func Debug() Option { return Option{flag: "-g"} }

// LTO links the LTO-IR inputs with link-time optimization (-lto); Link adds
// it by itself when an input is LTO-IR.
func LTO() Option { return Option{flag: "-lto"} }

// PTXOutput makes the link give PTX (Output.PTX) instead of a cubin (-ptx):
// the whole program after link-time optimization, for the driver to
// compile when it loads it, or for reading. It needs LTO-IR inputs.
func PTXOutput() Option { return Option{flag: "-ptx"} }

// MaxRegisters bounds the registers of each thread (-maxrregcount).
func MaxRegisters(n int) Option {
	if n <= 0 {
		return Option{err: fmt.Errorf("nvjitlink: MaxRegisters(%d): not positive", n)}
	}
	return Option{flag: fmt.Sprintf("-maxrregcount=%d", n)}
}

// FlushDenormals sets whether single-precision denormals are flushed to
// zero in LTO code (-ftz).
func FlushDenormals(on bool) Option { return Option{flag: fmt.Sprintf("-ftz=%t", on)} }

// PreciseDivision sets whether single-precision division is IEEE-rounded
// in LTO code (-prec-div).
func PreciseDivision(on bool) Option { return Option{flag: fmt.Sprintf("-prec-div=%t", on)} }

// PreciseSqrt sets whether single-precision square roots are IEEE-rounded
// in LTO code (-prec-sqrt).
func PreciseSqrt(on bool) Option { return Option{flag: fmt.Sprintf("-prec-sqrt=%t", on)} }

// FMA sets whether multiplies and adds may be fused in LTO code (-fma).
func FMA(on bool) Option { return Option{flag: fmt.Sprintf("-fma=%t", on)} }

// KernelsUsed names the kernels the program launches, so that LTO may
// drop the others (-kernels-used=, one option for each name).
func KernelsUsed(names ...string) []Option {
	out := make([]Option, len(names))
	for i, n := range names {
		out[i] = Flag("-kernels-used=" + n)
		if n == "" {
			out[i] = Option{err: fmt.Errorf("nvjitlink: KernelsUsed: an empty name")}
		}
	}
	return out
}

// Ptxas passes an option to ptxas, which compiles PTX for the link
// (-Xptxas=).
func Ptxas(opt string) Option {
	if opt == "" {
		return Option{err: fmt.Errorf("nvjitlink: Ptxas: an empty option")}
	}
	return Flag("-Xptxas=" + opt)
}

// Verbose writes what the link did to the info log (-verbose).
func Verbose() Option { return Option{flag: "-verbose"} }

// WarningsAsErrors makes a warning fail the link (-Werror).
func WarningsAsErrors() Option { return Option{flag: "-Werror"} }
