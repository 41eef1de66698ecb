//go:build !((linux && (amd64 || arm64)) || (windows && amd64))

package nvml

// libraryName: NVIDIA ships no NVML for this system.
const libraryName = "libnvidia-ml"

// searchPlaces: the one attempt fails with the reason.
func searchPlaces(getenv func(string) string) []string { return []string{libraryName} }
