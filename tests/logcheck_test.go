package tests

import (
	"context"
	"log/slog"
	gosync "sync"
	"testing"
)

// errorLog records what is logged at level Error while a test runs.
type errorLog struct {
	mu   gosync.Mutex
	msgs []string
}

func (h *errorLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *errorLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	h.msgs = append(h.msgs, msg)
	return nil
}
func (h *errorLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errorLog) WithGroup(string) slog.Handler      { return h }

func (h *errorLog) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

// captureErrors makes slog's default logger record errors for the rest of
// the test and returns the record.
func captureErrors(t testing.TB) *errorLog {
	h := &errorLog{}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(old) })
	return h
}

// noErrorsLogged fails the test, at its end, if anything was logged at
// level Error.
func noErrorsLogged(t testing.TB) {
	h := captureErrors(t)
	t.Cleanup(func() {
		for _, m := range h.messages() {
			t.Errorf("logged at error level: %s", m)
		}
	})
}
