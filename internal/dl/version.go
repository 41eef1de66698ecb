//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package dl

import "unsafe"

// askVersion calls fn, a version call of shape kind, and stores its
// answer in l.
func askVersion(kind VersionKind, fn uintptr, l *Opened) error {
	var f struct {
		Frame
		a0, a1 unsafe.Pointer
		_      [6]uintptr
	}
	var a, b int32
	switch kind {
	case VersionInt:
		f.Fn, f.N, f.a0 = fn, 1, unsafe.Pointer(&a)
		Call(&f.Frame)
		l.Version = int(a)
	case VersionMajorMinor:
		f.Fn, f.N, f.a0, f.a1 = fn, 2, unsafe.Pointer(&a), unsafe.Pointer(&b)
		Call(&f.Frame)
		l.Major, l.Minor = int(a), int(b)
	case VersionProperties:
		var v [3]int32 // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL: 0, 1, 2
		for i := range v {
			var p struct {
				Frame
				a0 uintptr
				a1 unsafe.Pointer
				_  [6]uintptr
			}
			p.Fn, p.N, p.a0, p.a1 = fn, 2, uintptr(i), unsafe.Pointer(&v[i])
			Call(&p.Frame)
			if int32(p.R) != 0 {
				return errStatus(int32(p.R))
			}
		}
		l.Major, l.Minor = int(v[0]), int(v[1])
		l.Version = int(v[0])*10000 + int(v[1])*100 + int(v[2])
		return nil
	case VersionReturn:
		f.Fn = fn
		Call(&f.Frame)
		l.Version = int(f.R)
		return nil
	}
	if int32(f.R) != 0 {
		return errStatus(int32(f.R))
	}
	return nil
}
