package nvjitlink_test

import (
	"testing"

	"github.com/purecuda/purecuda/nvjitlink"
)

// A NUL byte anywhere in an input's name or an option, the first byte
// included, is refused before anything is loaded: C would cut the string
// there.
func TestLinkRefusesNULBytesAnywhere(t *testing.T) {
	ptx := nvjitlink.PTX("a.ptx", []byte("p"))
	for name, c := range map[string]struct {
		inputs []nvjitlink.Input
		opts   []string
	}{
		"NUL first in a name":     {[]nvjitlink.Input{nvjitlink.PTX("\x00a", []byte("p"))}, nil},
		"NUL last in a name":      {[]nvjitlink.Input{nvjitlink.PTX("a\x00", []byte("p"))}, nil},
		"NUL first in an option":  {[]nvjitlink.Input{ptx}, []string{"\x00-O3"}},
		"NUL inside an option":    {[]nvjitlink.Input{ptx}, []string{"-O\x003"}},
		"NUL alone as an option":  {[]nvjitlink.Input{ptx}, []string{"\x00"}},
		"an empty later input":    {[]nvjitlink.Input{ptx, nvjitlink.Cubin("c", nil)}, nil},
		"an empty option, second": {[]nvjitlink.Input{ptx}, []string{"-O3", ""}},
	} {
		if out, err := nvjitlink.Link("sm_90", c.inputs, flags(c.opts)...); out != nil || err == nil {
			t.Errorf("%s: %v, %v; want an error", name, out, err)
		}
	}
}

// flags are the options given as nvJitLink spells them.
func flags(ss []string) []nvjitlink.Option {
	var opts []nvjitlink.Option
	for _, s := range ss {
		opts = append(opts, nvjitlink.Flag(s))
	}
	return opts
}
