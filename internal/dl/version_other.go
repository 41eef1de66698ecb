//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package dl

// askVersion is never reached: no library opens on this system.
func askVersion(kind VersionKind, fn uintptr, l *Opened) error { return errUnsupported }
