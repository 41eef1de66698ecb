//go:build !gpu

package libcuda

// layoutRequired makes TestLayoutMatchesC fail, not skip, when it finds no
// C compiler or no CUDA headers. Without the gpu tag it skips.
const layoutRequired = false
