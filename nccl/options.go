package nccl

import (
	"runtime"
	"unsafe"
)

// Option sets a field of a communicator's ncclConfig_t, for InitRank,
// FromEnv, Split and Shrink. NCCL picks its own value for every field no
// option sets.
type Option func(*config)

// config is an ncclConfig_t with the Go memory its strings point into.
type config struct {
	c       Config
	strings [][]byte
}

// newConfig is NCCL_CONFIG_INITIALIZER with opts applied.
func newConfig(opts []Option) *config {
	cf := &config{c: Config{
		Size: uint64(unsafe.Sizeof(Config{})), Magic: 0xcafebeef, Version: NCCL_VERSION_CODE,
		Blocking: NCCL_CONFIG_UNDEF_INT, CgaClusterSize: NCCL_CONFIG_UNDEF_INT,
		MinCTAs: NCCL_CONFIG_UNDEF_INT, MaxCTAs: NCCL_CONFIG_UNDEF_INT,
		SplitShare: NCCL_CONFIG_UNDEF_INT, TrafficClass: NCCL_CONFIG_UNDEF_INT,
		CollnetEnable: NCCL_CONFIG_UNDEF_INT, CTAPolicy: NCCL_CONFIG_UNDEF_INT,
		ShrinkShare: NCCL_CONFIG_UNDEF_INT, NvlsCTAs: NCCL_CONFIG_UNDEF_INT,
		NChannelsPerNetPeer: NCCL_CONFIG_UNDEF_INT, NvlinkCentricSched: NCCL_CONFIG_UNDEF_INT,
	}}
	for _, o := range opts {
		if o != nil {
			o(cf)
		}
	}
	return cf
}

// blocking reports whether the communicator's calls block (NCCL's default).
func (cf *config) blocking() bool { return cf.c.Blocking != 0 }

// keep keeps the strings alive until the call that reads cf has returned.
func (cf *config) keep() { runtime.KeepAlive(cf.strings) }

// cString is s as a NUL-terminated C string kept with cf.
func (cf *config) cString(s string) *byte {
	b := append([]byte(s), 0)
	cf.strings = append(cf.strings, b)
	return &b[0]
}

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// Blocking sets ncclConfig_t.blocking. A blocking communicator (NCCL's
// default) makes NCCL's calls return when done; with Blocking(false) they
// return at once with ncclInProgress and this package waits for them
// cooperatively (package sync's poller on ncclCommGetAsyncError), so that
// the wait honours the call's context.Context: InitRank's, Sync's,
// CloseContext's.
func Blocking(b bool) Option { return func(cf *config) { cf.c.Blocking = boolInt(b) } }

// CGASize sets ncclConfig_t.cgaClusterSize, the cooperative group array
// cluster size of NCCL's kernels (0 to 8).
func CGASize(n int) Option { return func(cf *config) { cf.c.CgaClusterSize = int32(n) } }

// MinCTAs sets ncclConfig_t.minCTAs, the fewest thread blocks a collective uses.
func MinCTAs(n int) Option { return func(cf *config) { cf.c.MinCTAs = int32(n) } }

// MaxCTAs sets ncclConfig_t.maxCTAs, the most thread blocks a collective uses.
func MaxCTAs(n int) Option { return func(cf *config) { cf.c.MaxCTAs = int32(n) } }

// NetName sets ncclConfig_t.netName, the network module to use ("IB",
// "Socket", ...).
func NetName(name string) Option { return func(cf *config) { cf.c.NetName = cf.cString(name) } }

// CommName sets ncclConfig_t.commName, the communicator's name in NCCL's
// logs.
func CommName(name string) Option { return func(cf *config) { cf.c.CommName = cf.cString(name) } }

// SplitShare sets ncclConfig_t.splitShare: communicators split from this
// one share its resources.
func SplitShare(b bool) Option { return func(cf *config) { cf.c.SplitShare = boolInt(b) } }

// ShrinkShare sets ncclConfig_t.shrinkShare: communicators shrunk from this
// one share its resources.
func ShrinkShare(b bool) Option { return func(cf *config) { cf.c.ShrinkShare = boolInt(b) } }

// TrafficClass sets ncclConfig_t.trafficClass, the network traffic class.
func TrafficClass(n int) Option { return func(cf *config) { cf.c.TrafficClass = int32(n) } }

// CollnetEnable sets ncclConfig_t.collnetEnable (in-network reductions).
func CollnetEnable(b bool) Option { return func(cf *config) { cf.c.CollnetEnable = boolInt(b) } }

// CTAPolicy sets ncclConfig_t.CTAPolicy: NCCL_CTA_POLICY_DEFAULT,
// NCCL_CTA_POLICY_EFFICIENCY or NCCL_CTA_POLICY_ZERO.
func CTAPolicy(p int) Option { return func(cf *config) { cf.c.CTAPolicy = int32(p) } }

// NVLSCTAs sets ncclConfig_t.nvlsCTAs, the thread blocks of NVLink SHARP
// collectives.
func NVLSCTAs(n int) Option { return func(cf *config) { cf.c.NvlsCTAs = int32(n) } }
