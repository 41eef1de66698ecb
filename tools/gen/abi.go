package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// versionSuffix matches the _vN suffix of a versioned symbol or typedef.
var versionSuffix = regexp.MustCompile(`_v[0-9]+$`)

// baseName strips the version suffix: cuMemAlloc_v2 -> cuMemAlloc.
func baseName(symbol string) string { return versionSuffix.ReplaceAllString(symbol, "") }

// abiVersion finds the ABI version of f for cuGetProcAddress: the PFN_<base>_v<N>
// typedef of cudaTypedefs.h whose parameters have the same types as f's
// declaration, after typedefs are resolved and qualifiers dropped. Where
// several versions have that signature (the ABI changed without a new
// signature), a versioned symbol (cuEventElapsedTime_v2) means the newest;
// for an unversioned one that would be a guess, so it is an error.
func abiVersion(h *header, f *function) (base string, version int, err error) {
	base = baseName(f.symbol)
	want := make([]string, len(f.params))
	for i, p := range f.params {
		want[i] = canon(h, p.typ)
	}
	prefix := "PFN_" + base + "_v"
	var tried []string
	matches := 0
	for name, td := range h.pfns {
		digits, ok := strings.CutPrefix(name, prefix)
		n, err := strconv.Atoi(digits)
		if !ok || err != nil {
			continue // another function, or a _ptds/_ptsz variant
		}
		params := td.typ.elem.params
		got := make([]string, len(params))
		for i, p := range params {
			got[i] = canon(h, p.typ)
		}
		if strings.Join(got, ",") == strings.Join(want, ",") {
			version = max(version, n)
			matches++
		}
		tried = append(tried, fmt.Sprintf("%s (%d parameters)", name, len(params)))
	}
	switch {
	case len(tried) == 0:
		return "", 0, fmt.Errorf("%s: %s has no %s* typedef in cudaTypedefs.h", f.pos, f.symbol, prefix)
	case version == 0:
		sort.Strings(tried)
		return "", 0, fmt.Errorf("%s: no PFN typedef matches %s (%d parameters): %s",
			f.pos, f.symbol, len(f.params), strings.Join(tried, ", "))
	case matches > 1 && base == f.symbol:
		return "", 0, fmt.Errorf("%s: %d PFN typedefs match unversioned %s", f.pos, matches, f.symbol)
	}
	return base, version, nil
}

// canon spells a type for comparing signatures: typedefs resolved, const
// dropped.
func canon(h *header, t *ctype) string {
	r, err := resolve(h, t)
	if err != nil {
		return "?" + t.name
	}
	switch r.kind {
	case kBuiltin:
		return r.name
	case kPointer:
		return "*" + canon(h, r.elem)
	case kArray:
		return fmt.Sprintf("[%d]%s", r.len, canon(h, r.elem))
	case kRecord:
		return fmt.Sprintf("record(%p)", r.rec)
	case kEnum:
		return fmt.Sprintf("enum(%p)", r.enum)
	}
	s := "func("
	for i, p := range r.params {
		if i > 0 {
			s += ","
		}
		s += canon(h, p.typ)
	}
	return s + ")" + canon(h, r.elem)
}

// argKind says how a parameter is passed to the trampoline.
type argKind int

const (
	aWord    argKind = iota // an integer in one word: uintptr(x)
	aPointer                // a pointer the garbage collector must see: unsafe.Pointer(x)
	aFloat                  // float, through callFloat
	aDouble                 // double, through callFloat
	aSmall                  // struct of 4 or 8 bytes by value, in one word
	aBig                    // struct by value, larger than 16 bytes
)

// classify decides how p is passed. The rules hold on the three ABIs:
// integers, enums, handles and pointers take one integer word; a struct
// of 1, 2, 4 or 8 bytes travels in one integer register everywhere (all
// the header's are integer-only); a struct above 16 bytes goes on the
// stack on System V AMD64 and as a pointer to a copy on AAPCS64 and
// Windows x64. Anything else is refused.
func classify(h *header, p param, goType string) (argKind, int64, error) {
	r, err := resolve(h, p.typ)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case goType == "unsafe.Pointer" || strings.HasPrefix(goType, "*"):
		return aPointer, 0, nil
	case r.kind == kBuiltin && r.name == "float":
		return aFloat, 0, nil
	case r.kind == kBuiltin && r.name == "double":
		return aDouble, 0, nil
	case r.kind == kRecord:
		size, align, err := sizeAlign(h, r)
		if err != nil {
			return 0, 0, err
		}
		if err := integerOnly(h, r); err != nil {
			return 0, 0, fmt.Errorf("parameter %s: %v", p.name, err)
		}
		switch {
		case size == 4 || size == 8:
			return aSmall, size, nil
		case size > 16 && size%8 == 0 && align <= 8:
			return aBig, size, nil
		}
		return 0, 0, fmt.Errorf("parameter %s: passing a %d-byte struct by value is not supported", p.name, size)
	}
	return aWord, 0, nil
}

// integerOnly fails if a by-value struct holds floating-point members,
// which some ABIs pass in vector registers.
func integerOnly(h *header, t *ctype) error {
	r, err := resolve(h, t)
	if err != nil {
		return err
	}
	switch r.kind {
	case kBuiltin:
		if builtins[r.name].float {
			return fmt.Errorf("a struct with floating-point members by value is not supported")
		}
	case kArray:
		return integerOnly(h, r.elem)
	case kRecord:
		for _, f := range r.rec.fields {
			if err := integerOnly(h, f.typ); err != nil {
				return err
			}
		}
	}
	return nil
}
