package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/purecuda/purecuda/libcuda"
)

// FuncAttribute is an attribute of a kernel that SetAttribute sets.
type FuncAttribute int

const (
	// MaxDynamicSharedMemory is the most dynamic shared memory, in bytes,
	// that a launch of the kernel may ask for
	// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). It starts at
	// 48 KiB less the kernel's static shared memory; a launch that asks
	// for more fails until it is raised, up to the device's
	// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (227 KiB on
	// an H200) less the static shared memory.
	MaxDynamicSharedMemory = FuncAttribute(libcuda.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
	// PreferredSharedMemoryCarveout is the share of the L1/shared memory
	// the kernel would like as shared memory, in percent (0 to 100, or
	// -1 for no preference): a hint (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT).
	PreferredSharedMemoryCarveout = FuncAttribute(libcuda.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)
	// RequiredClusterWidth, RequiredClusterHeight and RequiredClusterDepth
	// fix the cluster shape the kernel must be launched with (compute
	// capability 9.0 and later); a kernel compiled with __cluster_dims__
	// has them already and refuses a change.
	RequiredClusterWidth  = FuncAttribute(libcuda.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)
	RequiredClusterHeight = FuncAttribute(libcuda.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)
	RequiredClusterDepth  = FuncAttribute(libcuda.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH)
	// NonPortableClusterSizeAllowed (1) lets the kernel be launched with
	// clusters of more than the portable 8 blocks, where the device allows
	// (16 on an H100 or H200).
	NonPortableClusterSizeAllowed = FuncAttribute(libcuda.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
	// ClusterSchedulingPolicy is the CUclusterSchedulingPolicy the kernel's
	// clusters prefer (CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE).
	ClusterSchedulingPolicy = FuncAttribute(libcuda.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
)

// String is the attribute's C name.
func (a FuncAttribute) String() string { return libcuda.Function_attribute(a).String() }

// SetAttribute sets one of the kernel's attributes (cuFuncSetAttribute),
// for the launches that follow, on every stream. A value out of range for
// the attribute or the device is an error matching
// CUDA_ERROR_INVALID_VALUE; a negative one is refused before the driver
// except for PreferredSharedMemoryCarveout's -1.
//
//	// 100 KiB of dynamic shared memory a block:
//	if err := f.SetAttribute(cuda.MaxDynamicSharedMemory, 100<<10); err != nil { ... }
//	err = s.LaunchWith(f, cuda.Config{Grid: g, Block: b, SharedMem: 100 << 10}, args...)
func (f *Func) SetAttribute(a FuncAttribute, v int) error {
	switch a {
	case MaxDynamicSharedMemory, PreferredSharedMemoryCarveout, RequiredClusterWidth, RequiredClusterHeight,
		RequiredClusterDepth, NonPortableClusterSizeAllowed, ClusterSchedulingPolicy:
	default:
		return fmt.Errorf("cuda: Func.SetAttribute(%d): not an attribute that can be set", int(a))
	}
	if v > math.MaxInt32 || v < 0 && !(a == PreferredSharedMemoryCarveout && v == -1) {
		return fmt.Errorf("cuda: Func.SetAttribute(%v, %d): out of range", a, v)
	}
	return f.do("SetAttribute", "cuFuncSetAttribute("+a.String()+")", func() error {
		return libcuda.FuncSetAttribute(f.raw, libcuda.Function_attribute(a), int32(v))
	})
}

// do runs call with the kernel's module held open and its context
// current. Lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA
// 12.2) leaves a function unloaded until its first launch, and the driver
// answers some queries only for a loaded one: when call's error matches
// CUDA_ERROR_FUNCTION_NOT_LOADED, the function is loaded (cuFuncLoad) and
// call runs again.
//
// A driver error is wrapped as driverErr(name, err).
func (f *Func) do(op, name string, call func() error) error {
	if f == nil || f.mod == nil || f.mod.st == nil {
		return nilErr("Func", op)
	}
	ms := f.mod.st
	if !ms.mu.TryRLock() { // a Close
		return closedErr("Func", op)
	}
	defer ms.mu.RUnlock()
	if ms.closed {
		return closedErr("Func", op)
	}
	return ms.ctx.do(func() error {
		err := call()
		if errors.Is(err, libcuda.CUDA_ERROR_FUNCTION_NOT_LOADED) {
			if lerr := libcuda.FuncLoad(f.raw); lerr != nil {
				return errors.Join(driverErr(name, err), driverErr("cuFuncLoad", lerr))
			}
			err = call()
		}
		if err != nil {
			return driverErr(name, err)
		}
		return nil
	})
}

// Registers is the number of registers each thread of the kernel uses
// (CU_FUNC_ATTRIBUTE_NUM_REGS).
func (f *Func) Registers() (int, error) { return f.Attribute(libcuda.CU_FUNC_ATTRIBUTE_NUM_REGS) }

// LocalMemory is the local memory each thread uses, in bytes
// (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES): spills and stack.
func (f *Func) LocalMemory() (int, error) {
	return f.Attribute(libcuda.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
}

// MaxThreadsPerBlock is the largest block the kernel can be launched with
// on its device (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK): its registers
// may make it less than the device's.
func (f *Func) MaxThreadsPerBlock() (int, error) {
	return f.Attribute(libcuda.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
}

// StaticSharedMemory is the shared memory the kernel declares, in bytes
// (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES); a launch's dynamic shared memory
// comes on top.
func (f *Func) StaticSharedMemory() (int, error) {
	return f.Attribute(libcuda.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
}

// ConstMemory is the constant memory the kernel uses, in bytes
// (CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES).
func (f *Func) ConstMemory() (int, error) {
	return f.Attribute(libcuda.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)
}

// MaxDynamicSharedMemory is the dynamic shared memory a launch may ask
// for now, in bytes (see the attribute MaxDynamicSharedMemory).
func (f *Func) MaxDynamicSharedMemory() (int, error) {
	return f.Attribute(libcuda.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
}

// PTXVersion is the PTX virtual architecture the kernel was compiled for,
// major*10+minor: 90 for compute_90 (CU_FUNC_ATTRIBUTE_PTX_VERSION).
func (f *Func) PTXVersion() (int, error) { return f.Attribute(libcuda.CU_FUNC_ATTRIBUTE_PTX_VERSION) }

// BinaryVersion is the architecture of the kernel's machine code,
// major*10+minor: 90 for sm_90 (CU_FUNC_ATTRIBUTE_BINARY_VERSION).
func (f *Func) BinaryVersion() (int, error) {
	return f.Attribute(libcuda.CU_FUNC_ATTRIBUTE_BINARY_VERSION)
}

// MaxActiveBlocksPerSM is how many blocks of blockSize threads, each with
// dynSmem bytes of dynamic shared memory, can be resident on one
// multiprocessor at once (cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags;
// without flags it counts as cuOccupancyMaxActiveBlocksPerMultiprocessor
// does; see OccupancyDisableCachingOverride).
func (f *Func) MaxActiveBlocksPerSM(blockSize, dynSmem int, flags ...OccupancyFlag) (int, error) {
	if blockSize <= 0 || blockSize > math.MaxInt32 || dynSmem < 0 {
		return 0, fmt.Errorf("cuda: Func.MaxActiveBlocksPerSM(%d, %d): out of range", blockSize, dynSmem)
	}
	fl, err := occupancyFlags("MaxActiveBlocksPerSM", flags)
	if err != nil {
		return 0, err
	}
	var n int32
	err = f.do("MaxActiveBlocksPerSM", "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", func() error {
		return libcuda.OccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, f.raw, int32(blockSize), uint64(dynSmem), fl)
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// SuggestedBlockSize is the block size that gives the kernel the most
// resident threads per multiprocessor with dynSmem bytes of dynamic shared
// memory a block, and the smallest grid that fills the device with such
// blocks (cuOccupancyMaxPotentialBlockSizeWithFlags; flags as for
// MaxActiveBlocksPerSM).
func (f *Func) SuggestedBlockSize(dynSmem int, flags ...OccupancyFlag) (minGrid, blockSize int, err error) {
	if dynSmem < 0 {
		return 0, 0, fmt.Errorf("cuda: Func.SuggestedBlockSize(%d): negative shared memory", dynSmem)
	}
	fl, err := occupancyFlags("SuggestedBlockSize", flags)
	if err != nil {
		return 0, 0, err
	}
	var g, b int32
	err = f.do("SuggestedBlockSize", "cuOccupancyMaxPotentialBlockSizeWithFlags", func() error {
		return libcuda.OccupancyMaxPotentialBlockSizeWithFlags(&g, &b, f.raw, 0, uint64(dynSmem), 0, fl)
	})
	if err != nil {
		return 0, 0, err
	}
	return int(g), int(b), nil
}

// SuggestedBlockSizeFunc is SuggestedBlockSize for a kernel whose dynamic
// shared memory depends on the block size: dynSmem(blockSize) gives it.
// It is worked out in Go, the way the CUDA runtime's
// cudaOccupancyMaxPotentialBlockSizeVariableSMem does: each block size
// from the largest the kernel takes down, a warp at a time, is asked of
// cuOccupancyMaxActiveBlocksPerMultiprocessor, and the first with the
// most resident threads wins. dynSmem runs on the calling goroutine.
func (f *Func) SuggestedBlockSizeFunc(dynSmem func(blockSize int) int) (minGrid, blockSize int, err error) {
	if dynSmem == nil {
		return 0, 0, fmt.Errorf("cuda: Func.SuggestedBlockSizeFunc: nil function: %w", ErrNil)
	}
	if f == nil || f.mod == nil || f.mod.st == nil {
		return 0, 0, nilErr("Func", "SuggestedBlockSizeFunc")
	}
	dev := f.mod.st.ctx.dev
	perSM, err := dev.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
	if err != nil {
		return 0, 0, err
	}
	warp, err := dev.WarpSize()
	if err != nil {
		return 0, 0, err
	}
	sms, err := dev.MultiprocessorCount()
	if err != nil {
		return 0, 0, err
	}
	limit, err := dev.MaxThreadsPerBlock()
	if err != nil {
		return 0, 0, err
	}
	fmax, err := f.MaxThreadsPerBlock()
	if err != nil {
		return 0, 0, err
	}
	limit = min(limit, fmax)
	if warp <= 0 || limit <= 0 {
		return 0, 0, fmt.Errorf("cuda: Func.SuggestedBlockSizeFunc: warp size %d, block limit %d", warp, limit)
	}
	best, bestBlocks, bestThreads := 0, 0, 0
	for try := (limit + warp - 1) / warp * warp; try > 0; try -= warp {
		b := min(try, limit)
		smem := dynSmem(b)
		if smem < 0 {
			return 0, 0, fmt.Errorf("cuda: Func.SuggestedBlockSizeFunc: %d bytes of shared memory for blocks of %d", smem, b)
		}
		n, err := f.MaxActiveBlocksPerSM(b, smem)
		if err != nil {
			return 0, 0, err
		}
		if n*b > bestThreads {
			best, bestBlocks, bestThreads = b, n, n*b
		}
		if bestThreads == perSM {
			break
		}
	}
	return bestBlocks * sms, best, nil
}

// MaxActiveClusters is how many clusters of c.Cluster blocks, each of
// c.Block threads with c.SharedMem bytes of dynamic shared memory, can be
// resident on the device at once (cuOccupancyMaxActiveClusters; compute
// capability 9.0 and later). c.Grid must be a multiple of c.Cluster.
func (f *Func) MaxActiveClusters(c Config) (int, error) {
	if c.Cluster == (Dim3{}) {
		return 0, errors.New("cuda: Func.MaxActiveClusters: Config.Cluster not set")
	}
	gx, gy, gz, ok1 := c.Grid.dims()
	bx, by, bz, ok2 := c.Block.dims()
	cx, cy, cz, ok3 := c.Cluster.dims()
	if !ok1 || !ok2 || !ok3 || c.SharedMem < 0 || c.SharedMem > math.MaxUint32 {
		return 0, fmt.Errorf("cuda: Func.MaxActiveClusters: grid %v, block %v, cluster %v, shared memory %d: out of range", c.Grid, c.Block, c.Cluster, c.SharedMem)
	}
	attr := libcuda.LaunchAttribute{Id: libcuda.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION}
	*attr.Value.ClusterDim() = libcuda.LaunchAttributeValue_clusterDim{X: cx, Y: cy, Z: cz}
	cfg := libcuda.LaunchConfig{
		GridDimX: gx, GridDimY: gy, GridDimZ: gz,
		BlockDimX: bx, BlockDimY: by, BlockDimZ: bz,
		SharedMemBytes: uint32(c.SharedMem),
		Attrs:          &attr,
		NumAttrs:       1,
	}
	var n int32
	err := f.do("MaxActiveClusters", "cuOccupancyMaxActiveClusters", func() error {
		return libcuda.OccupancyMaxActiveClusters(&n, f.raw, &cfg)
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
