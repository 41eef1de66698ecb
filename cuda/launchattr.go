package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// MemSyncDomain is the memory synchronization domain of a launch
// (Config.MemSyncDomain; compute capability 9.0 and later): fences of
// kernels in one domain need not wait for memory traffic of the other.
type MemSyncDomain int

const (
	// MemSyncDefault is the domain of ordinary kernels.
	MemSyncDefault MemSyncDomain = MemSyncDomain(libcuda.CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT)
	// MemSyncRemote is for kernels that talk to other devices (NCCL's):
	// their fences do not wait for the default domain's traffic.
	MemSyncRemote MemSyncDomain = MemSyncDomain(libcuda.CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
)

// extended says whether c asks for anything that only cuLaunchKernelEx
// can give.
func (c *Config) extended() bool {
	return c.Cooperative || c.Cluster != (Dim3{}) || c.ProgrammaticSerialization ||
		c.ProgrammaticEvent != nil || c.Priority != 0 || c.MemSyncDomain != MemSyncDefault
}

// maxLaunchAttrs is how many attributes a Config can give.
const maxLaunchAttrs = 6

// launchEx launches through cuLaunchKernelEx with c's attributes. The
// context is current.
func launchEx(f libcuda.Function, c *Config, d [6]uint32, s libcuda.Stream, params *unsafe.Pointer) error {
	var attrs [maxLaunchAttrs]libcuda.LaunchAttribute
	n := 0
	add := func(id libcuda.LaunchAttributeID) *libcuda.LaunchAttributeValue {
		attrs[n].Id = id
		n++
		return &attrs[n-1].Value
	}
	if c.Cooperative {
		*add(libcuda.CU_LAUNCH_ATTRIBUTE_COOPERATIVE).Cooperative() = 1
	}
	if c.Cluster != (Dim3{}) {
		x, y, z, ok := c.Cluster.dims()
		if !ok {
			return fmt.Errorf("cluster %v out of range: %w", c.Cluster, libcuda.CUDA_ERROR_INVALID_VALUE)
		}
		*add(libcuda.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).ClusterDim() = libcuda.LaunchAttributeValue_clusterDim{X: x, Y: y, Z: z}
	}
	if c.ProgrammaticSerialization {
		*add(libcuda.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).ProgrammaticStreamSerializationAllowed() = 1
	}
	if c.ProgrammaticEvent != nil {
		es, err := c.ProgrammaticEvent.acquire("LaunchWith (ProgrammaticEvent)")
		if err != nil {
			return err
		}
		defer es.mu.RUnlock()
		trigger := int32(0)
		if c.ProgrammaticEventAtBlockStart {
			trigger = 1
		}
		*add(libcuda.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT).ProgrammaticEvent() = libcuda.LaunchAttributeValue_programmaticEvent{
			Event: es.raw, TriggerAtBlockStart: trigger,
		}
	}
	if c.Priority != 0 {
		*add(libcuda.CU_LAUNCH_ATTRIBUTE_PRIORITY).Priority() = int32(c.Priority)
	}
	if c.MemSyncDomain != MemSyncDefault {
		if c.MemSyncDomain != MemSyncRemote {
			return fmt.Errorf("MemSyncDomain %d: not a domain: %w", c.MemSyncDomain, libcuda.CUDA_ERROR_INVALID_VALUE)
		}
		*add(libcuda.CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN).MemSyncDomain() = libcuda.LaunchMemSyncDomain(c.MemSyncDomain)
	}
	cfg := libcuda.LaunchConfig{
		GridDimX: d[0], GridDimY: d[1], GridDimZ: d[2],
		BlockDimX: d[3], BlockDimY: d[4], BlockDimZ: d[5],
		SharedMemBytes: uint32(c.SharedMem),
		HStream:        s,
		Attrs:          &attrs[0],
		NumAttrs:       uint32(n),
	}
	return libcuda.LaunchKernelEx(&cfg, f, params, nil)
}

// needsHopper refuses, before the driver, what a device before compute
// capability 9.0 lacks: programmatic dependent launch and memory
// synchronization domains.
func (c *Config) needsHopper(st *streamState) error {
	if !c.ProgrammaticSerialization && c.ProgrammaticEvent == nil && c.MemSyncDomain == MemSyncDefault {
		return nil
	}
	major, err := st.ctx.computeMajor()
	if err != nil {
		return err
	}
	if major < 9 {
		return fmt.Errorf("cuda: LaunchWith: programmatic dependent launch and memory sync domains need compute capability 9.0, the device has %d.x: %w", major, errors.ErrUnsupported)
	}
	return nil
}

// computeMajor is the device's compute capability major, read once.
func (st *ctxState) computeMajor() (int, error) {
	if m := st.major.Load(); m != 0 {
		return int(m), nil
	}
	m, err := st.dev.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
	if err != nil {
		return 0, err
	}
	st.major.Store(int32(m))
	return m, nil
}
