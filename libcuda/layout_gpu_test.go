//go:build gpu

package libcuda

// layoutRequired makes TestLayoutMatchesC fail, not skip, when it finds no
// C compiler or no CUDA headers: a machine that runs the gpu tests has both.
const layoutRequired = true
