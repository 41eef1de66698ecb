package nvml

import (
	"context"
	"errors"
	"fmt"

	"github.com/purecuda/purecuda/internal/dl"
)

// Event is one event NVML reported (nvmlEventData_t).
type Event struct {
	Device Device
	Type   uint64 // one of the NvmlEventType* bits
	// Data is the event's value: the Xid for NvmlEventTypeXidCriticalError,
	// else 0 or what nvml.h says for the type.
	Data uint64
	// GPUInstanceID and ComputeInstanceID name the MIG instances the event
	// belongs to; NotAvailable32 where it is not about one.
	GPUInstanceID, ComputeInstanceID uint32
}

// SupportedEvents is the bit set of NvmlEventType* values the device can
// report (nvmlDeviceGetSupportedEventTypes).
func (d Device) SupportedEvents() (uint64, error) {
	var t uint64
	if err := DeviceGetSupportedEventTypes(d, &t); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetSupportedEventTypes", err)
	}
	return t, nil
}

// WaitPeriod is how long one nvmlEventSetWait_v2 of a Watcher blocks, in
// milliseconds: it bounds how long a Watcher takes to see that its
// context ended.
const WaitPeriod = 100

// Watcher delivers the events of an NVML event set on a channel until its
// context ends.
type Watcher struct {
	events chan Event
	done   chan struct{}
	err    error // why it stopped; set before done closes
}

// Watch registers the devices for the event types (a bit set of
// NvmlEventType* values; nvmlEventSetCreate, nvmlDeviceRegisterEvents) and
// starts a goroutine that waits for them (nvmlEventSetWait_v2, WaitPeriod
// at a time) and sends each on Events, until ctx ends or a wait fails; it
// then frees the set (nvmlEventSetFree) and closes the channel. The
// Watcher holds an Init of its own while it runs, so a Shutdown of the
// caller's does not pull NVML from under it. Events waits for a reader:
// NVML keeps what arrives meanwhile, up to its own limit.
//
// A type a device does not support fails the registration with
// NVML_ERROR_NOT_SUPPORTED (ask SupportedEvents first).
func Watch(ctx context.Context, types uint64, devices ...Device) (*Watcher, error) {
	if ctx == nil {
		return nil, errors.New("nvml: Watch with a nil context")
	}
	if len(devices) == 0 || types == 0 {
		return nil, errors.New("nvml: Watch needs at least one device and one event type")
	}
	if err := Init(); err != nil {
		return nil, err
	}
	var set EventSet
	if err := EventSetCreate(&set); err != nil {
		_ = Shutdown()
		return nil, dl.Failed("nvml", "nvmlEventSetCreate", err)
	}
	for _, d := range devices {
		if err := DeviceRegisterEvents(d, types, set); err != nil {
			_ = EventSetFree(set)
			_ = Shutdown()
			return nil, dl.Failed("nvml", "nvmlDeviceRegisterEvents", err)
		}
	}
	w := &Watcher{events: make(chan Event), done: make(chan struct{})}
	go w.run(ctx, set)
	return w, nil
}

// Events is the channel of events; it is closed when the Watcher stops.
func (w *Watcher) Events() <-chan Event { return w.events }

// Done is closed when the Watcher has stopped and freed its event set.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err says why the Watcher stopped, once Done is closed: the context's
// error, or the failure of a wait or of freeing the set. Before, it is nil.
func (w *Watcher) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

func (w *Watcher) run(ctx context.Context, set EventSet) {
	var err error
	defer func() {
		if ferr := EventSetFree(set); ferr != nil {
			err = errors.Join(err, dl.Failed("nvml", "nvmlEventSetFree", ferr))
		}
		if serr := Shutdown(); serr != nil {
			err = errors.Join(err, serr)
		}
		w.err = err
		close(w.events)
		close(w.done)
	}()
	for {
		if err = ctx.Err(); err != nil {
			return
		}
		var data EventData
		werr := EventSetWait(set, &data, WaitPeriod)
		if errors.Is(werr, NVML_ERROR_TIMEOUT) {
			continue
		}
		if werr != nil {
			err = dl.Failed("nvml", "nvmlEventSetWait_v2", werr)
			return
		}
		ev := Event{Device: data.Device, Type: data.EventType, Data: data.EventData,
			GPUInstanceID: data.GpuInstanceId, ComputeInstanceID: data.ComputeInstanceId}
		select {
		case w.events <- ev:
		case <-ctx.Done():
			err = ctx.Err()
			return
		}
	}
}

// eventTypeNames are the NvmlEventType* bits by name, for EventTypeString.
var eventTypeNames = []struct {
	bit  uint64
	name string
}{
	{NvmlEventTypeSingleBitEccError, "SingleBitEccError"},
	{NvmlEventTypeDoubleBitEccError, "DoubleBitEccError"},
	{NvmlEventTypePState, "PState"},
	{NvmlEventTypeXidCriticalError, "XidCriticalError"},
	{NvmlEventTypeClock, "Clock"},
	{NvmlEventTypePowerSourceChange, "PowerSourceChange"},
	{NvmlEventMigConfigChange, "MigConfigChange"},
	{NvmlEventTypeSingleBitEccErrorStorm, "SingleBitEccErrorStorm"},
	{NvmlEventTypeDramRetirementEvent, "DramRetirementEvent"},
	{NvmlEventTypeDramRetirementFailure, "DramRetirementFailure"},
	{NvmlEventTypeNonFatalPoisonError, "NonFatalPoisonError"},
	{NvmlEventTypeFatalPoisonError, "FatalPoisonError"},
	{NvmlEventTypeGpuUnavailableError, "GpuUnavailableError"},
	{NvmlEventTypeGpuRecoveryAction, "GpuRecoveryAction"},
}

// EventTypeString names the bits of an event type set, "XidCriticalError|Clock".
func EventTypeString(types uint64) string {
	s := ""
	for _, n := range eventTypeNames {
		if types&n.bit != 0 {
			if s != "" {
				s += "|"
			}
			s += n.name
			types &^= n.bit
		}
	}
	if types != 0 {
		if s != "" {
			s += "|"
		}
		s += fmt.Sprintf("%#x", types)
	}
	if s == "" {
		return "None"
	}
	return s
}
