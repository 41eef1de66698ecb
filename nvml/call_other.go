//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package nvml

// On other systems no library can be loaded (see load_other.go), so every
// wrapper returns the load error before it reaches call. This stub only
// keeps the package building.
func call(f *frame) { f.r = uintptr(NVML_ERROR_LIBRARY_NOT_FOUND) }
