package testenv

import (
	"embed"
	"io/fs"

	"github.com/purecuda/purecuda/internal/testenv/cbuild"
)

// The C stand-ins for NVIDIA's libraries live in internal/testenv/sim
// (sim.c, the driver simulator; cublassim.c, cuBLAS and cuBLASLt; a new
// library's stand-in goes beside them) and are built by the system C
// compiler when a test binary starts, once per change (package cbuild).
// On Windows each is a DLL built beforehand by .ci/windows-wine and named
// by $PURECUDA_<NAME>_DLL (cbuild.DLLEnv). A new stand-in is one Stub and
// one LoadStub call in its package's TestMain (or a testenv Main of its
// own, as MainBLAS):
//
//	lib, err := testenv.LoadStub(testenv.Stub{
//		Name:    "ncclsim",
//		Sources: []string{"ncclsim.c"},
//		Links:   []string{testenv.SimLibrary()}, // its work runs on the simulator's streams
//		Env:     []string{"PURECUDA_LIBNCCL"},
//		Stat:    "ncclsim_stat",
//		Live:    map[string]string{"NCCL communicators": "live_comms"},
//	})

// Stub describes a C stand-in: its name, sources, links, the variables
// that point the package under test at it, its hooks and the counts of
// live objects the leak check watches. See cbuild.Stub.
type Stub = cbuild.Stub

// Hook is a function of a stand-in to bind (a pointer to a func variable,
// filled in as purego.RegisterLibFunc does).
type Hook = cbuild.Hook

// stubSources are the files of internal/testenv/sim.
//
//go:embed sim
var stubSources embed.FS

func stubFS() fs.FS {
	sub, err := fs.Sub(stubSources, "sim")
	if err != nil {
		panic(err) // the folder is embedded: cannot happen
	}
	return sub
}

// BuildStub builds the stand-in name from sources (files of
// internal/testenv/sim, the .c ones compiled together) linked with links
// (a library's path, e.g. SimLibrary(), or a system library's name for
// -l, e.g. "m") and returns the shared library's path; the build is
// cached per compiler, sources and links. On Windows it returns the DLL
// that $PURECUDA_<NAME>_DLL names. See cbuild.BuildStub.
func BuildStub(name string, sources []string, links ...string) (path string, err error) {
	return cbuild.BuildStub(stubFS(), name, sources, links...)
}

// LoadStub builds s (BuildStub), points s.Env at it, binds s.Hooks and has
// the leak check that Main runs after the tests watch s.Live; it returns
// the library's path. Call it before the package under test loads its
// library: in TestMain, or in the setup that Main runs (as MainBLAS does).
func LoadStub(s Stub) (path string, err error) { return cbuild.LoadStub(stubFS(), s) }
