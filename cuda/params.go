package cuda

import (
	"fmt"
	"reflect"

	"github.com/ianlancetaylor/demangle"
)

// Launches are checked by type where the kernel's name carries its
// parameter types (a C++ kernel's mangled name), and by size where it does
// not (an extern "C" kernel's). The check is decided once, when Module.Func
// makes the Func: each parameter gets the set of argument codes it takes
// (cParam.accept). Each Arg carries its code, set by its constructor, so a
// launch tests one bit per argument and allocates nothing.

// class is what a scalar is: the C type of a parameter, or the Go type of
// an argument or of a Slice's elements.
type class uint8

const (
	classNone  class = iota
	classBool        // bool
	classI8          // int8, signed char
	classU8          // uint8, unsigned char
	classI16         // int16, short
	classU16         // uint16, unsigned short, half
	classI32         // int32, int
	classU32         // uint32, unsigned int
	classI64         // int64, long long
	classU64         // uint64, unsigned long long
	classF32         // float32, float
	classF64         // float64, double
	classOther       // a Go struct, array or complex number; a C class type
	numClasses
)

var classNames = [numClasses]string{"", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
	"int64", "uint64", "float32", "float64", "struct or array"}

// classOf is the class of a Go type without pointers.
func classOf(t reflect.Type) class {
	switch t.Kind() {
	case reflect.Bool:
		return classBool
	case reflect.Int8:
		return classI8
	case reflect.Uint8:
		return classU8
	case reflect.Int16:
		return classI16
	case reflect.Uint16:
		return classU16
	case reflect.Int32:
		return classI32
	case reflect.Uint32:
		return classU32
	case reflect.Int64, reflect.Int:
		if t.Size() == 4 {
			return classI32
		}
		return classI64
	case reflect.Uint64, reflect.Uint, reflect.Uintptr:
		if t.Size() == 4 {
			return classU32
		}
		return classU64
	case reflect.Float32:
		return classF32
	case reflect.Float64:
		return classF64
	}
	return classOther
}

// An Arg's code says what Go value it passes: a scalar of a class (Int32,
// Float32, Value of a number), codeMem+class for memory of elements of a
// class (Slice.Arg, Pinned.Arg), or one of the others. Codes are below
// 64: a parameter's accept is a set of them.
const (
	codeRaw    = 16 // Ptr: a device address of unknown memory
	codeBuffer = 17 // Buffer: host memory whose element type is not known
	codeStruct = 18 // Struct
	codeMem    = 32 // + the class of the elements
)

// describeCode names the Go side of an argument, for errors.
func describeCode(code uint8) string {
	switch {
	case code == uint8(classNone):
		return "a zero Arg"
	case code == uint8(classOther):
		return "a struct or array Value"
	case code < uint8(numClasses):
		art := "a "
		if n := classNames[code]; n[0] == 'i' || n[0] == 'u' {
			art = "an "
		}
		return art + classNames[code] + " (" + scalarMaker(class(code)) + ")"
	case code == codeRaw:
		return "a raw device address (Ptr)"
	case code == codeBuffer:
		return "a hostmem.Buffer"
	case code == codeStruct:
		return "a cuda.Struct"
	case code >= codeMem && code < codeMem+uint8(numClasses):
		return "memory of " + classNames[code-codeMem] + " elements (Slice.Arg, Pinned.Arg)"
	}
	return fmt.Sprintf("argument code %d", code)
}

func scalarMaker(c class) string {
	switch c {
	case classI32:
		return "Int32 or Value"
	case classU32:
		return "Uint32 or Value"
	case classI64:
		return "Int64 or Value"
	case classU64:
		return "Uint64 or Value"
	case classF32:
		return "Float32 or Value"
	case classF64:
		return "Float64 or Value"
	}
	return "Value"
}

// cParam is one parameter of a C++ kernel, from its mangled name.
type cParam struct {
	text     string // the C++ type, as c++filt prints it: "float const*"
	accept   uint64 // the codes of the arguments it takes
	readOnly bool   // a pointer to const: the kernel only reads through it
}

const (
	acceptAll     = ^uint64(0)
	acceptScalars = uint64(1)<<numClasses - 2 // every class but classNone
	acceptMemAll  = (uint64(1)<<numClasses - 2) << codeMem
	acceptPtrs    = acceptMemAll | 1<<codeRaw | 1<<codeBuffer
)

// builtinClasses are the C builtin types whose arguments are checked, and
// the classes each takes. Where a type takes two (char's signedness; long
// and unsigned long, 8 bytes on Linux and 4 on Windows), the size check
// picks between them.
var builtinClasses = map[string][]class{
	"bool":               {classBool},
	"char":               {classI8, classU8},
	"signed char":        {classI8},
	"unsigned char":      {classU8},
	"short":              {classI16},
	"unsigned short":     {classU16},
	"int":                {classI32},
	"unsigned int":       {classU32},
	"long":               {classI64, classI32},
	"unsigned long":      {classU64, classU32},
	"long long":          {classI64},
	"unsigned long long": {classU64},
	"half":               {classU16},
	"_Float16":           {classU16},
	"float":              {classF32},
	"double":             {classF64},
}

// classifyParam works out which arguments a parameter of C++ type a
// takes:
//   - a builtin number type (int, float, unsigned long long, ...): a
//     scalar of that class only (Int32 for int, not Uint32 nor Float32);
//   - a pointer to a builtin number type: memory of that element class
//     (a Slice[float32] for float* and const float*), Ptr or a
//     hostmem.Buffer; a pointer to void, to a class type or to a pointer
//     takes any memory;
//   - a class type (a struct, a union, an enum, CUDA's float4 or __half):
//     a Value of any type or a Struct, of the parameter's size (the name
//     gives no layout to check);
//   - anything else (a reference, an array, __int128, ...): any argument
//     of the parameter's size.
func classifyParam(a demangle.AST, opts []demangle.Option) cParam {
	p := cParam{text: demangle.ASTToString(a, opts...), accept: acceptAll}
	switch t := a.(type) {
	case *demangle.BuiltinType:
		if cs, ok := builtinClasses[t.Name]; ok {
			p.accept = 0
			for _, c := range cs {
				p.accept |= 1 << c
			}
		}
	case *demangle.PointerType:
		p.accept = acceptPtrs
		base := t.Base
		if q, ok := base.(*demangle.TypeWithQualifiers); ok {
			p.readOnly = hasQualifier(q.Qualifiers, "const")
			base = q.Base
		}
		if b, ok := base.(*demangle.BuiltinType); ok {
			if cs, ok := builtinClasses[b.Name]; ok {
				p.accept = 1<<codeRaw | 1<<codeBuffer
				for _, c := range cs {
					p.accept |= 1 << (codeMem + c)
				}
			}
		}
	case *demangle.Name, *demangle.Qualified, *demangle.Template:
		p.accept = acceptScalars | 1<<codeStruct
	}
	return p
}

func hasQualifier(qs demangle.AST, name string) bool {
	list, ok := qs.(*demangle.Qualifiers)
	if !ok {
		return false
	}
	for _, q := range list.Qualifiers {
		if q, ok := q.(*demangle.Qualifier); ok && q.Name == name {
			return true
		}
	}
	return false
}
