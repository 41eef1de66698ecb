package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// Dim3 is a grid size in blocks or a block size in threads. A zero field
// counts as 1.
type Dim3 struct{ X, Y, Z int }

// Grid is the grid size of a launch, in blocks.
func Grid(x, y, z int) Dim3 { return Dim3{x, y, z} }

// Block is the block size of a launch, in threads.
func Block(x, y, z int) Dim3 { return Dim3{x, y, z} }

// dims returns d's fields for the driver, zeros as ones.
func (d Dim3) dims() (x, y, z uint32, ok bool) {
	ok = true
	f := func(v int) uint32 {
		switch {
		case v == 0:
			return 1
		case v < 0 || v > math.MaxUint32:
			ok = false
			return 0
		}
		return uint32(v)
	}
	return f(d.X), f(d.Y), f(d.Z), ok
}

// Config is a launch's shape and options, for LaunchWith.
type Config struct {
	// Grid and Block are the grid and block sizes.
	Grid, Block Dim3
	// SharedMem is the dynamic shared memory of each block, in bytes.
	SharedMem int
	// Cooperative launches the kernel so that its blocks may synchronise
	// with each other across the grid (CU_LAUNCH_ATTRIBUTE_COOPERATIVE):
	// every block must be resident at once.
	Cooperative bool
	// Cluster, when not zero, groups the blocks into thread block clusters
	// of this shape (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION; compute
	// capability 9.0 and later). Grid must be a multiple of it.
	Cluster Dim3
	// ProgrammaticSerialization lets the kernel start before the
	// previous kernel on the stream has finished, once each of that
	// kernel's blocks has triggered (griddepcontrol.launch_dependents,
	// cudaTriggerProgrammaticLaunchCompletion) or exited; the kernel
	// waits for the previous one's memory with griddepcontrol.wait
	// (cudaGridDependencySynchronize): programmatic dependent launch
	// (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION; compute
	// capability 9.0 and later, refused before the driver on others).
	ProgrammaticSerialization bool
	// ProgrammaticEvent, when set, is recorded once every block of the
	// kernel has triggered (or, with ProgrammaticEventAtBlockStart, has
	// started), for another stream to wait on: programmatic dependent
	// launch across streams (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
	// compute capability 9.0). The event must be made with DisableTiming.
	ProgrammaticEvent             *Event
	ProgrammaticEventAtBlockStart bool
	// Priority, when not 0, is the launch's priority, in the range the
	// context's streams take (lower numbers run first), instead of the
	// stream's (CU_LAUNCH_ATTRIBUTE_PRIORITY).
	Priority int
	// MemSyncDomain is the launch's memory synchronization domain
	// (CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN; compute capability 9.0,
	// refused before the driver on others).
	MemSyncDomain MemSyncDomain

	pc uintptr // the caller's return address (callerPC), for the launch history
}

// Arg is one argument of a kernel launch, made by Int32, Float32, Value,
// Slice.Arg, Pinned.Arg, Buffer and the like. It is a plain value: making
// one allocates nothing unless it holds a value of more than 16 bytes.
type Arg struct {
	// words holds a value of up to 16 bytes; for memory, the byte offset
	// in words[0] and the bytes the argument spans in words[1].
	words [2]uint64
	// ref is what else the argument is: nil for a value in words; the
	// memory passed (*allocHandle for a Slice, bufferMem, *structMem);
	// bigValue for a value of more than 16 bytes; or an error, why the
	// argument cannot be passed (see mem, big and argErr).
	ref      any
	size     uint32 // bytes the kernel's parameter must have
	code     uint8  // what Go value it is, for the type check (params.go)
	align    uint8  // a Value's or Struct's C alignment, for Struct; 0: its size
	readOnly bool   // ReadOnly: the kernel only reads the memory
}

// bigValue is the bytes of a value of more than 16 bytes (Arg.size of
// them), on the heap.
type bigValue struct{ p *byte }

// mem is the memory the argument passes, or nil. (Each kind is asked
// for by its type: no lookup of argMem's method table at run time.)
func (a *Arg) mem() argMem {
	if h, ok := a.ref.(*allocHandle); ok {
		return h
	}
	if b, ok := a.ref.(bufferMem); ok {
		return b
	}
	if s, ok := a.ref.(*structMem); ok {
		return s
	}
	return nil
}

// big is the bytes of a value of more than 16 bytes, or nil.
func (a *Arg) big() []byte {
	if b, ok := a.ref.(bigValue); ok {
		return unsafe.Slice(b.p, a.size)
	}
	return nil
}

// argErr is why the argument cannot be passed, or nil.
func (a *Arg) argErr() error {
	if a.ref == nil || a.mem() != nil {
		return nil
	}
	if _, ok := a.ref.(bigValue); ok {
		return nil
	}
	err, _ := a.ref.(error)
	return err
}

// errArg is an argument that cannot be passed, for err.
func errArg(err error) Arg { return Arg{ref: err} }

// ReadOnly marks a memory argument (Slice.Arg) as one the kernel only
// reads, for the ordering across streams (see Slice): a launch on one
// stream then does not wait for reads of the memory on others. A C++
// parameter that is a pointer to const is read only without it.
func (a Arg) ReadOnly() Arg {
	a.readOnly = true
	return a
}

// argMem is memory passed to a kernel by its device address.
type argMem interface {
	// acquire keeps the memory from being freed until done. It must not
	// be called again before done: a launch acquires each memory once,
	// however many arguments pass it.
	acquire() error
	// addr is the device address of the byte at off, between acquire and
	// done.
	addr(off uintptr) libcuda.Deviceptr
	// done records a use on st when launched, and ends acquire's hold.
	done(st *streamState, launched bool) error
}

// Int32 passes v as a 32-bit integer (C int).
func Int32(v int32) Arg {
	return Arg{words: [2]uint64{uint64(uint32(v))}, size: 4, code: uint8(classI32)}
}

// Uint32 passes v as an unsigned 32-bit integer (C unsigned int).
func Uint32(v uint32) Arg { return Arg{words: [2]uint64{uint64(v)}, size: 4, code: uint8(classU32)} }

// Int64 passes v as a 64-bit integer (C long long).
func Int64(v int64) Arg { return Arg{words: [2]uint64{uint64(v)}, size: 8, code: uint8(classI64)} }

// Uint64 passes v as an unsigned 64-bit integer (C unsigned long long,
// size_t).
func Uint64(v uint64) Arg { return Arg{words: [2]uint64{v}, size: 8, code: uint8(classU64)} }

// Float32 passes v as a float.
func Float32(v float32) Arg {
	return Arg{words: [2]uint64{uint64(math.Float32bits(v))}, size: 4, code: uint8(classF32)}
}

// Float64 passes v as a double.
func Float64(v float64) Arg {
	return Arg{words: [2]uint64{math.Float64bits(v)}, size: 8, code: uint8(classF64)}
}

// Ptr passes a raw device address, for memory that package cuda does not
// manage; nothing checks that it is valid.
func Ptr(p libcuda.Deviceptr) Arg { return Arg{words: [2]uint64{uint64(p)}, size: 8, code: codeRaw} }

// Value passes v by value: any type without Go pointers (numbers, arrays,
// structs of them), whose layout must be the kernel parameter's (Go lays
// out structs as C does for the same field types). A type with Go pointers
// makes the launch fail with ErrElemType. Values of more than 16 bytes are
// copied to the heap (one allocation).
func Value[T any](v T) Arg {
	t := reflect.TypeFor[T]()
	if err := checkElem(t); err != nil {
		return errArg(err)
	}
	a := Arg{size: uint32(t.Size()), code: uint8(classOf(t)), align: uint8(t.Align())}
	if t.Size() <= unsafe.Sizeof(a.words) {
		*(*T)(unsafe.Pointer(&a.words)) = v
		return a
	}
	p := new(T)
	*p = v
	a.ref = bigValue{(*byte)(unsafe.Pointer(p))}
	return a
}

// Buffer passes the device address of host memory from package hostmem
// (mapped, so the kernel reads and writes the host memory itself) and
// records the launch as a use of it (Buffer.Use), so that its release
// waits for the kernel.
func Buffer(b *hostmem.Buffer) Arg {
	if b == nil || b.Size() == 0 {
		return errArg(fmt.Errorf("nil hostmem.Buffer: %w", ErrNil))
	}
	return Arg{ref: bufferMem{b}, size: 8, code: codeBuffer}
}

// bufferMem is a hostmem.Buffer as a kernel argument.
type bufferMem struct{ b *hostmem.Buffer }

// acquire holds the buffer (hostmem's Buffer.Hold) until done has
// recorded the launch's use: a Free racing the launch then waits for the
// kernel too.
func (m bufferMem) acquire() error {
	if _, err := m.b.Hold(); err != nil {
		return ErrFreed
	}
	return nil
}

func (m bufferMem) addr(off uintptr) libcuda.Deviceptr {
	return m.b.DevicePtr() + libcuda.Deviceptr(off)
}

func (m bufferMem) done(st *streamState, launched bool) error {
	defer m.b.Unhold()
	if !launched {
		return nil
	}
	if err := m.b.Use(st.raw); err != nil {
		return fmt.Errorf("cuda: recording the use of a hostmem.Buffer: %w", err)
	}
	return nil
}

// Arg passes the device address of the slice's first element and records
// the launch's stream as a user of the memory (see Free).
func (x Slice[T]) Arg() Arg {
	if x.h == nil {
		return errArg(fmt.Errorf("zero Slice: %w", ErrNil))
	}
	size := unsafe.Sizeof(*new(T))
	// words[1]: the bytes the Slice spans, for the ordering across streams.
	return Arg{ref: x.h, words: [2]uint64{uint64(uintptr(x.off) * size), uint64(uintptr(x.n) * size)}, size: 8, code: codeMem + uint8(x.h.class)}
}

func (h *allocHandle) acquire() error {
	_, err := h.a().acquire(0)
	return err
}

func (h *allocHandle) addr(off uintptr) libcuda.Deviceptr { return h.a().ptr + libcuda.Deviceptr(off) }

func (h *allocHandle) done(st *streamState, launched bool) error {
	h.a().release(st, launched)
	return nil
}

// maxArgs bounds the arguments of a launch.
const maxArgs = 64

// The argument block of one launch lies on the launching goroutine's
// stack (launchArgs' arrays): the pointers cuLaunchKernel wants, the
// device addresses of memory arguments, and the launch's Structs laid out.
// Value arguments are pointed to where they are, in the caller's []Arg.
// The driver copies the values before the launch call returns. A launch
// of at most smallArgs arguments without Structs uses arrays of that
// size, the others arrays of maxArgs and room for Structs: a launch zeroes
// no more stack than it needs.
type (
	ptrBlock interface {
		[smallArgs]unsafe.Pointer | [maxArgs]unsafe.Pointer
	}
	addrBlock interface {
		[smallArgs]uint64 | [maxArgs]uint64
	}
	structBlock interface {
		[0]uint64 | [maxStructBytes / 8]uint64
	}
)

// smallArgs is the most arguments of a launch whose block is small: one
// without Structs.
const smallArgs = 8

// Launch runs kernel f on the stream with the given grid and block sizes
// (cuLaunchKernel). The arguments are checked against the kernel's
// parameters first: count and sizes, and for a C++ kernel the types its
// mangled name gives (see the package doc). Memory passed by a Slice
// or a hostmem.Buffer is recorded as used by the stream.
//
// Launch allocates nothing: write the arguments in the call,
//
//	s.Launch(saxpy, cuda.Grid(n/256, 1, 1), cuda.Block(256, 1, 1),
//		cuda.Int32(int32(n)), cuda.Float32(2), x.Arg(), y.Arg())
//
// or keep a []Arg and change its elements between launches.
//
// Each launch is written into its device's launch history (kernel, shape,
// stream, the caller's file:line), which a *LostError reports when a
// kernel faults (see ErrContextLost); in debug mode (SetDebug) the launch
// waits for its kernel.
//
//go:noinline
func (s *Stream) Launch(f *Func, grid, block Dim3, args ...Arg) error {
	// The common launch is made here, in one frame, with the checks and
	// records of launch in fewer instructions and cache lines (a launch's
	// Go code and data share the caches with the driver's); the others go
	// to launchSlow (goto slow, having changed nothing).
	pc := callerPC()
	var (
		st    *streamState
		ms    *moduleState
		dv    *devState
		d     [6]uint32
		ok    bool
		ptrs  [smallArgs]unsafe.Pointer
		addrs [smallArgs]uint64
		mems  [smallArgs]*alloc // argument i's allocation, for a Slice
		own   uint8             // bit i: argument i is mems[i]'s first, which holds it
		held  uint8             // bits of own held
		solo  uint8             // bits of own: st is mems[i]'s solo stream, which needs no order nor record
		kp    *unsafe.Pointer
		err   error
	)
	if s == nil || f == nil {
		goto slow
	}
	st, ms = s.st, f.ms
	d, ok = dims(grid, block)
	if st == nil || ms == nil || int(f.quick) != len(args)+1 || st.raw <= libcuda.CU_STREAM_PER_THREAD || !ok {
		goto slow
	}
	// The arguments against the shapes the Func accepted, and the
	// allocations of their Slices, whose first cache lines are read here
	// (their addresses), before the first locked instruction: their
	// misses overlap.
	if own, ok = gatherArgs(f, args, &addrs, &mems); !ok {
		goto slow
	}
	for i := range args {
		ptrs[i] = unsafe.Pointer(&args[i].words)
		if mems[i] != nil {
			ptrs[i] = unsafe.Pointer(&addrs[i])
		}
	}
	dv = st.dv
	if dv.debug.Load() != int32(DebugOff) {
		goto slow
	}
	// The holds: the stream, the module, each allocation; none waits (a
	// writer is a Close or a Free).
	if !st.mu.TryRLock() {
		goto slow
	}
	if st.closed || dv.lost.Load() != nil || !ms.mu.TryRLock() {
		st.mu.RUnlock()
		goto slow
	}
	if ms.closed || f.cu != st.cu {
		goto unhold
	}
	for b := own; b != 0; b &= b - 1 {
		i := bits.TrailingZeros8(b)
		m := mems[i]
		if !m.mu.TryRLock() {
			goto unhold
		}
		held |= 1 << i
		if m.freed {
			goto unhold
		}
		if m.solo.Load() == st {
			solo |= 1 << i
		}
	}
	if solo != own && !st.unordered {
		// Memory another stream used: ordered per argument, as launch
		// orders it (and recorded below).
		if err = orderArgs(st, f, args, &mems); err != nil {
			releaseHeld(&mems, held, ms, st)
			return err
		}
	}
	if len(args) > 0 {
		kp = &ptrs[0]
	}
	err = libcuda.LaunchKernel(f.raw, d[0], d[1], d[2], d[3], d[4], d[5], 0, st.raw, kp, nil)
	if err != nil {
		releaseHeld(&mems, held, ms, st)
		return launchErr(st, f, err)
	}
	dv.record(f, st, &d, pc)
	for b := held; b != 0; b &= b - 1 {
		i := bits.TrailingZeros8(b)
		m := mems[i]
		if solo>>i&1 == 0 {
			m.noteUse(st)
		}
		m.mu.RUnlock()
	}
	ms.mu.RUnlock()
	st.mu.RUnlock()
	return nil
unhold:
	releaseHeld(&mems, held, ms, st)
slow:
	return s.launchSlow(f, grid, block, args, pc)
}

// gatherArgs checks Launch's arguments against the shapes f accepted
// (each must be one of them: see shapeOf), and gives the allocation of
// each Slice argument and its device address; own has the bit of the
// first argument of each allocation. false: an argument of another kind
// or shape, for launchSlow.
func gatherArgs(f *Func, args []Arg, addrs *[smallArgs]uint64, mems *[smallArgs]*alloc) (own uint8, ok bool) {
	shapes := [2]uint64{f.shapes[0].Load(), f.shapes[1].Load()}
	for i := range args {
		a := &args[i]
		if uint16(shapes[i>>2&1]>>(16*(i&3))) != uint16(shapeOf(a)) {
			return 0, false
		}
		if a.ref == nil {
			continue
		}
		h, isSlice := a.ref.(*allocHandle)
		if !isSlice {
			return 0, false
		}
		m := h.a()
		if !slices.Contains(mems[:i], m) {
			own |= 1 << i
		}
		mems[i] = m
		addrs[i] = uint64(m.ptr) + a.words[0]
	}
	return own, true
}

// releaseHeld ends Launch's holds: of the allocations of the arguments
// in held, the module and the stream.
func releaseHeld(mems *[smallArgs]*alloc, held uint8, ms *moduleState, st *streamState) {
	for b := held; b != 0; b &= b - 1 {
		mems[bits.TrailingZeros8(b)].mu.RUnlock()
	}
	ms.mu.RUnlock()
	st.mu.RUnlock()
}

// orderArgs orders Launch's Slice arguments after the conflicting uses of
// other streams, as launch does (orderArg): those of an allocation that st
// uses alone are skipped by orderUse.
//
//go:noinline
func orderArgs(st *streamState, f *Func, args []Arg, mems *[smallArgs]*alloc) error {
	for i, m := range mems[:len(args)] {
		if m != nil {
			if err := orderArg(st, f, i, &args[i], m); err != nil {
				return err
			}
		}
	}
	return nil
}

// orderArg orders argument i, a, which passes allocation m, after the
// conflicting uses of other streams (orderUse): a read when a or its
// parameter is read only, a write otherwise.
func orderArg(st *streamState, f *Func, i int, a *Arg, m *alloc) error {
	access := Write
	if a.readOnly || f.paramReadOnly(i) {
		access = Read
	}
	lo := uintptr(a.words[0])
	if err := m.orderUse(st, access, lo, lo+uintptr(a.words[1])); err != nil {
		return fmt.Errorf("cuda: Launch %s: argument %d: ordering after other streams: %w", f.name, i, err)
	}
	return nil
}

// launchSlow is Launch through launch, for what Launch does not do itself:
// more than smallArgs arguments, an argument that is not a value of up to
// 16 bytes nor a Slice, a shape of arguments the Func has not accepted
// before (Func.shapes), a Func whose parameter list is not known, the
// NULL or per-thread stream, debug mode. In those, and when one of
// Launch's checks fails (a closed stream or module, a freed Slice, a lost
// context), Launch has changed nothing before it calls launchSlow.
// Launch's own path reads the lines it needs before its first locked
// instruction, so that their cache misses overlap, and takes no defer: it
// calls no code that can panic.
//
//go:noinline
func (s *Stream) launchSlow(f *Func, grid, block Dim3, args []Arg, pc uintptr) error {
	return s.launch(f, &Config{Grid: grid, Block: block, pc: pc}, args)
}

// LaunchWith is Launch with dynamic shared memory and the launch options
// of Config; with any option beyond the grid, the block and the shared
// memory set it uses cuLaunchKernelEx.
//
//go:noinline
func (s *Stream) LaunchWith(f *Func, c Config, args ...Arg) error {
	c.pc = callerPC()
	return s.launch(f, &c, args)
}

// launchErr is the error of a launch the driver refused.
//
//go:noinline
func launchErr(st *streamState, f *Func, err error) error {
	return st.ctx.check(dl.Failed("cuda", "cuLaunchKernel "+f.name, err))
}

// dims is a grid and a block size for the driver, zeros as ones; false
// when one is out of range.
func dims(grid, block Dim3) (d [6]uint32, ok bool) {
	// A negative size or one above MaxUint32 has bits above the 32nd.
	hi := (uint64(grid.X) | uint64(grid.Y) | uint64(grid.Z) | uint64(block.X) | uint64(block.Y) | uint64(block.Z)) >> 32
	d = [6]uint32{
		max(uint32(grid.X), 1), max(uint32(grid.Y), 1), max(uint32(grid.Z), 1),
		max(uint32(block.X), 1), max(uint32(block.Y), 1), max(uint32(block.Z), 1),
	}
	return d, hi == 0
}

// shapeOf is what the full check of a launch looks at in an argument
// (besides its error, which only arguments Launch does not take itself
// have): its code and size, in 16 bits, the top one set. A Func keeps
// those of arguments it accepted, by position (Func.shapes: four in each
// word), which stand for any other argument of the same shape there: the
// check of each argument depends on that argument alone.
func shapeOf(a *Arg) uint64 {
	return 1<<15 | uint64(a.code)<<9 | uint64(a.size&0x1ff)
}

// learnShape keeps the shape of args, which the full check has just
// accepted, for Launch: when every argument is one Launch takes itself
// (of at most 16 bytes, so that its size fits shapeOf).
func (f *Func) learnShape(args []Arg) {
	if int(f.quick) != len(args)+1 {
		return
	}
	var shape [2]uint64
	for i := range args {
		a := &args[i]
		if _, isSlice := a.ref.(*allocHandle); (a.ref != nil && !isSlice) || a.size > 16 {
			return
		}
		shape[i>>2] |= shapeOf(a) << (16 * (i & 3))
	}
	// Each word is right on its own: a launch that finds one word of
	// these args and the other of another accepted shape passes the
	// check too.
	if f.shapes[0].Load() != shape[0] {
		f.shapes[0].Store(shape[0])
	}
	if f.shapes[1].Load() != shape[1] {
		f.shapes[1].Store(shape[1])
	}
}

// launch, launchFunc and launchArgs each keep one lock or hold in a defer
// of their own, with few returns: such defers are open-coded (a function
// with more defers times returns goes through the runtime's slower defer
// records), and a panic still unlocks.
func (s *Stream) launch(f *Func, c *Config, args []Arg) error {
	st, err := s.acquire("Launch")
	if err != nil {
		return err
	}
	defer st.mu.RUnlock()
	return st.launchFunc(f, c, args)
}

// launchFunc holds f's module open for the launch and checks the
// configuration and the arguments.
func (st *streamState) launchFunc(f *Func, c *Config, args []Arg) error {
	if f == nil || f.ms == nil {
		return nilErr("Func", "Launch")
	}
	ms := f.ms
	if !ms.mu.TryRLock() { // a Close
		return fmt.Errorf("cuda: Launch %s: module: %w", f.name, ErrClosed)
	}
	defer ms.mu.RUnlock()
	switch {
	case ms.closed:
		return fmt.Errorf("cuda: Launch %s: module: %w", f.name, ErrClosed)
	case f.cu != st.cu:
		return fmt.Errorf("cuda: Launch %s: the module and the stream belong to different contexts", f.name)
	}
	if err := f.check(args); err != nil {
		return err
	}
	f.learnShape(args)
	if len(args) <= smallArgs {
		small := true
		for i := range args {
			small = small && args[i].code != codeStruct
		}
		if small {
			return launchArgs[[smallArgs]unsafe.Pointer, [smallArgs]uint64, [0]uint64](st, f, c, args)
		}
	}
	return launchArgs[[maxArgs]unsafe.Pointer, [maxArgs]uint64, [maxStructBytes / 8]uint64](st, f, c, args)
}

// launchArgs holds the memory the arguments pass while it launches, with
// an argument block of P, A and S (see ptrBlock).
func launchArgs[P ptrBlock, A addrBlock, S structBlock](st *streamState, f *Func, c *Config, args []Arg) (err error) {
	d, ok := dims(c.Grid, c.Block)
	if !ok || c.SharedMem < 0 || c.SharedMem > math.MaxUint32 {
		return fmt.Errorf("cuda: Launch %s: grid %v, block %v, shared memory %d: out of range", f.name, c.Grid, c.Block, c.SharedMem)
	}
	var ptrs P
	var addrs A
	var structs S
	nstructs := 0    // words of structs used
	var owner uint64 // bit i: argument i acquired its memory (maxArgs is 64)
	held := 0        // args[:held] are looked at
	launched := false
	defer func() {
		if derr := releaseArgs(st, args[:held], owner, launched); err == nil {
			err = derr
		}
	}()
	for i := range args {
		a := &args[i]
		switch m := a.mem(); {
		case m != nil:
			if !heldBefore(args[:i], owner, a.ref) {
				if err := m.acquire(); err != nil {
					return fmt.Errorf("cuda: Launch %s: argument %d: %w", f.name, i, err)
				}
				owner |= 1 << i
				held = i + 1
			}
			if a.code == codeStruct {
				p, err := m.(*structMem).lay(unsafe.Slice((*uint64)(unsafe.Pointer(&structs)), unsafe.Sizeof(structs)/8), &nstructs)
				if err != nil {
					return fmt.Errorf("cuda: Launch %s: argument %d: %w", f.name, i, err)
				}
				ptrs[i] = p
				break
			}
			if h, ok := m.(*allocHandle); ok {
				if err := orderArg(st, f, i, a, h.a()); err != nil {
					return err
				}
			}
			addrs[i] = uint64(m.addr(uintptr(a.words[0])))
			ptrs[i] = unsafe.Pointer(&addrs[i])
		case a.big() != nil:
			ptrs[i] = unsafe.Pointer(&a.big()[0])
		default:
			ptrs[i] = unsafe.Pointer(&a.words)
		}
		held = i + 1
	}
	var params *unsafe.Pointer
	if len(args) > 0 {
		params = &ptrs[0]
	}
	if c.extended() || st.raw <= libcuda.CU_STREAM_PER_THREAD {
		launched, err = st.launchCurrent(f, c, d, params)
	} else {
		// A launch on a stream of its own runs in the stream's context
		// whatever context the calling thread has (DESIGN.md, driver
		// facts; checked by tests' TestConformanceLaunchRunsInTheStreamsContext):
		// no cuCtxGetCurrent, no cuCtxSetCurrent, no locked thread.
		err = libcuda.LaunchKernel(f.raw, d[0], d[1], d[2], d[3], d[4], d[5], uint32(c.SharedMem), st.raw, params, nil)
		if err != nil {
			return launchErr(st, f, err)
		}
		launched = true
	}
	if !launched {
		return st.ctx.check(err)
	}
	n := st.dv.record(f, st, &d, c.pc)
	if st.dv.debug.Load() != int32(DebugOff) && err == nil {
		err = st.debugWait(f, n, &d, c.pc, args, unsafe.Slice((*uint64)(unsafe.Pointer(&addrs)), len(args)))
	}
	return err
}

// heldBefore reports whether one of args, which come before an argument
// whose memory is ref, holds that memory already: bit i of owner is set
// when args[i] acquired its memory.
func heldBefore(args []Arg, owner uint64, ref any) bool {
	for j := range args {
		if owner>>j&1 != 0 && args[j].ref == ref {
			return true
		}
	}
	return false
}

// releaseArgs ends the uses of the memory that args acquired (bit i of
// owner set: args[i] did) for a launch that was made or not, and returns
// the first error.
func releaseArgs(st *streamState, args []Arg, owner uint64, launched bool) error {
	var err error
	for i := range args {
		if owner>>i&1 != 0 {
			if derr := args[i].mem().done(st, launched); derr != nil && err == nil {
				err = derr
			}
		}
	}
	return err
}

// launchCurrent launches with the stream's context current: the NULL,
// legacy and per-thread streams are the current context's, and
// cuLaunchKernelEx was not measured without one.
func (st *streamState) launchCurrent(f *Func, c *Config, d [6]uint32, params *unsafe.Pointer) (launched bool, err error) {
	if err := c.needsHopper(st); err != nil {
		return false, err
	}
	prev, err := st.ctx.enter()
	if err != nil {
		return false, err
	}
	call := "cuLaunchKernel"
	if c.extended() {
		call = "cuLaunchKernelEx"
		err = launchEx(f.raw, c, d, st.raw, params)
	} else {
		err = libcuda.LaunchKernel(f.raw, d[0], d[1], d[2], d[3], d[4], d[5], uint32(c.SharedMem), st.raw, params, nil)
	}
	if err != nil {
		err = fmt.Errorf("cuda: %s %s: %w", call, f.name, err)
	}
	return err == nil, errors.Join(err, st.ctx.leave(prev))
}
