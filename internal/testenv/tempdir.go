package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TempDir is t.TempDir for tests that also run under Wine (.ci/windows-wine):
// a new directory, removed with its contents when the test ends. The removal
// goes entry by entry, deepest first, with os.Remove: os.RemoveAll on
// Windows, which t.TempDir's cleanup uses, deletes through
// NtSetInformationFile's FileDispositionInformationEx, which Wine 8.0
// refuses, so a non-empty t.TempDir fails the test there. What cannot be
// removed fails the test, as with t.TempDir.
func TempDir(t testing.TB) string {
	t.Helper()
	pattern := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == '*' || r == '?' || r == '"' || r == '<' || r == '>' || r == '|' {
			return '_'
		}
		return r
	}, t.Name())
	dir, err := os.MkdirTemp("", pattern+"-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() {
		var paths []string
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			paths = append(paths, p)
			return nil
		})
		if err != nil {
			t.Errorf("TempDir cleanup: %v", err)
		}
		// WalkDir lists a directory before its entries: backwards, every
		// entry goes before its directory.
		for _, p := range slices.Backward(paths) {
			if err := os.Remove(p); err != nil {
				t.Errorf("TempDir cleanup: %v", err)
			}
		}
	})
	return dir
}
