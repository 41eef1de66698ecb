//go:build linux && (amd64 || arm64)

package nvml

import "path/filepath"

// libraryName is NVML's file name on Linux.
const libraryName = "libnvidia-ml.so.1"

// searchPlaces lists where Load looks, in order: the name through the
// dynamic loader, then the folders where the NVIDIA container runtime and
// WSL put the driver's libraries.
func searchPlaces(getenv func(string) string) []string {
	return []string{
		libraryName,
		filepath.Join("/usr/local/nvidia/lib64", libraryName),
		filepath.Join("/usr/lib/wsl/lib", libraryName),
	}
}
