//go:build !linux

package sync

import "time"

// sleeper is the shared poller's sleep between rounds: a timer, or a kick
// that ends the sleep early. (On Windows the runtime's timers are of high
// resolution; Linux has its own sleeper: see sleep_linux.go.)
type sleeper struct {
	kicked chan struct{} // holds a kick not yet taken
	timer  *time.Timer
}

func newSleeper() sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return sleeper{kicked: make(chan struct{}, 1), timer: t}
}

// arm readies a sleep: a kick from now on ends it.
func (s sleeper) arm() {
	select {
	case <-s.kicked:
	default:
	}
}

// kick ends the armed sleep, at once or before it begins.
func (s sleeper) kick() {
	select {
	case s.kicked <- struct{}{}:
	default:
	}
}

// sleep sleeps for d, or until kicked.
func (s sleeper) sleep(d time.Duration) {
	s.timer.Reset(d)
	select {
	case <-s.timer.C:
	case <-s.kicked:
		s.timer.Stop()
	}
}
