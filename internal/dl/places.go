package dl

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Places lists where Open looks on this system when s.Env is unset, in
// order (see linuxPlaces and windowsPlaces).
func (s *Spec) Places(getenv func(string) string) []string {
	p, _ := s.places(getenv)
	return p
}

// places is Places, and the Python sites searched for pip's wheels.
func (s *Spec) places(getenv func(string) string) (places, sites []string) {
	switch runtime.GOOS {
	case "linux":
		return s.linuxPlaces(getenv)
	case "windows":
		return s.windowsPlaces(getenv, systemDir(getenv)), nil
	}
	return s.Names(), nil
}

// linuxPlaces lists where Open looks on Linux. First the names through
// the dynamic loader (LD_LIBRARY_PATH, the ld.so cache). Then, for a
// driver library, the names in each of s.LinuxDirs; for a toolkit
// library, the folders that exist of /usr/local/cuda/lib64,
// /usr/local/cuda/targets/*/lib, $CUDA_PATH's lib64 and targets/*/lib,
// $CONDA_PREFIX/lib, and the nvidia/<s.Pip>/lib folders of the Python
// site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, the python3 found on PATH
// (pythonPrefixes), ~/.local, /usr/local and /usr. sites describes the
// site-packages patterns searched, for the error.
func (s *Spec) linuxPlaces(getenv func(string) string) (places, sites []string) {
	places = append(places, s.Linux...)
	if s.Driver {
		for _, dir := range s.LinuxDirs {
			for _, name := range s.Linux {
				places = append(places, filepath.Join(dir, name))
			}
		}
		return places, nil
	}
	add := func(patterns ...string) {
		for _, p := range patterns {
			matches, _ := filepath.Glob(p)
			places = append(places, matches...)
		}
	}
	add("/usr/local/cuda/lib64", "/usr/local/cuda/targets/*/lib")
	if p := getenv("CUDA_PATH"); p != "" {
		add(filepath.Join(p, "lib64"), filepath.Join(p, "targets", "*", "lib"))
	}
	if p := getenv("CONDA_PREFIX"); p != "" {
		add(filepath.Join(p, "lib"))
	}
	if len(s.Pip) == 0 {
		return dedup(places), nil
	}
	for _, st := range pythonSites(getenv) {
		for _, dir := range s.Pip {
			add(filepath.Join(st.pattern, "nvidia", dir, "lib"))
		}
		if st.from != "" {
			sites = append(sites, st.pattern+" ("+st.from+")")
		} else {
			sites = append(sites, st.pattern)
		}
	}
	return dedup(places), sites
}

// site is a Python site-packages folder (a glob pattern), and where it
// came from ("$VIRTUAL_ENV", "the python3 on PATH: ...") for the error.
type site struct{ pattern, from string }

// pythonSites lists the site-packages folders where pip's wheels are
// looked for, in order, without repeats: those of $VIRTUAL_ENV,
// $CONDA_PREFIX, the python3 on PATH, ~/.local, /usr/local and /usr.
func pythonSites(getenv func(string) string) []site {
	var all []site
	prefix := func(dir, from string, dist bool) {
		all = append(all, site{filepath.Join(dir, "lib", "python3*", "site-packages"), from})
		if dist {
			all = append(all, site{filepath.Join(dir, "lib", "python3*", "dist-packages"), from})
		}
	}
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := getenv(env); p != "" {
			prefix(p, "$"+env, false)
		}
	}
	if exe, prefixes := pythonPrefixes(getenv); exe != "" {
		for _, p := range prefixes {
			if p != "/usr" && p != "/usr/local" { // searched below, after ~/.local as Python does
				prefix(p, "the python3 on PATH: "+exe, true)
			}
		}
	}
	if p := getenv("HOME"); p != "" {
		all = append(all, site{filepath.Join(p, ".local", "lib", "python3*", "site-packages"), "~/.local"})
	}
	prefix("/usr/local", "", true)
	prefix("/usr", "", true)
	all = append(all, site{"/usr/lib64/python3*/site-packages", ""})
	seen := map[string]bool{}
	out := all[:0]
	for _, st := range all {
		if !seen[st.pattern] {
			seen[st.pattern] = true
			out = append(out, st)
		}
	}
	return out
}

// pythonPrefixes finds the first python3 on $PATH (read through getenv)
// and the installation prefixes whose site-packages it reads, without
// running it: a virtual environment's folder (the one holding
// pyvenv.cfg, beside the executable or one folder up, the symbolic link
// not followed, as PEP 405 says), and its base installation's when
// pyvenv.cfg includes the system site-packages; otherwise the folder
// above the executable's, as found and with symbolic links followed
// (/opt/conda/bin/python3 -> /opt/conda). exe is "" without a python3.
func pythonPrefixes(getenv func(string) string) (exe string, prefixes []string) {
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // the working folder is no installation to trust
		}
		p := filepath.Join(dir, "python3")
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		exe = p
		break
	}
	if exe == "" {
		return "", nil
	}
	bin := filepath.Dir(exe)
	for _, venv := range []string{bin, filepath.Dir(bin)} {
		cfg, ok := readPyvenv(filepath.Join(venv, "pyvenv.cfg"))
		if !ok {
			continue
		}
		prefixes = append(prefixes, venv)
		if strings.EqualFold(cfg["include-system-site-packages"], "true") && cfg["home"] != "" {
			prefixes = append(prefixes, filepath.Dir(filepath.Clean(cfg["home"])))
		}
		return exe, prefixes
	}
	prefixes = append(prefixes, filepath.Dir(bin))
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		if p := filepath.Dir(filepath.Dir(real)); p != prefixes[0] {
			prefixes = append(prefixes, p)
		}
	}
	return exe, prefixes
}

// readPyvenv reads the key = value lines of a pyvenv.cfg; ok is false
// when there is none.
func readPyvenv(path string) (map[string]string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	cfg := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			cfg[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	return cfg, true
}

// windowsPlaces lists where Open looks on Windows, given the system
// folder sysDir (System32). A driver library: the names in sysDir, then
// in each of s.WindowsDirs whose variable is set, all as full paths,
// never through the DLL search path (the current folder and PATH could
// hold a planted DLL). A toolkit library: %CUDA_PATH%\bin\x64 (CUDA 13
// moved its DLLs there) and %CUDA_PATH%\bin, then the names through the
// DLL search path (which includes PATH). It depends on nothing but its
// arguments, so that it is tested everywhere.
func (s *Spec) windowsPlaces(getenv func(string) string, sysDir string) []string {
	var places []string
	if s.Driver {
		dirs := []string{sysDir}
		for _, d := range s.WindowsDirs {
			if d, ok := expandWindows(d, getenv); ok {
				dirs = append(dirs, d)
			}
		}
		for _, d := range dirs {
			for _, name := range s.Windows {
				places = append(places, windowsJoin(d, name))
			}
		}
		return places
	}
	if p := getenv("CUDA_PATH"); p != "" {
		places = append(places, windowsJoin(p, "bin", "x64"), windowsJoin(p, "bin"))
	}
	return append(places, s.Windows...)
}

// expandWindows replaces a leading %VARIABLE% of dir by its value; ok is
// false when the variable is unset.
func expandWindows(dir string, getenv func(string) string) (string, bool) {
	if !strings.HasPrefix(dir, "%") {
		return dir, true
	}
	end := strings.Index(dir[1:], "%")
	if end < 0 {
		return dir, true
	}
	v := getenv(dir[1 : end+1])
	if v == "" {
		return "", false
	}
	return v + dir[end+2:], true
}

// windowsJoin joins path elements with Windows' separator, as
// filepath.Join does on Windows, whatever the system running it.
func windowsJoin(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			p = strings.TrimLeft(p, `\/`)
			b.WriteByte('\\')
		}
		if i < len(parts)-1 {
			p = strings.TrimRight(p, `\/`)
		}
		b.WriteString(p)
	}
	return b.String()
}

// dedup drops the repeats of places, keeping the first.
func dedup(places []string) []string {
	seen := make(map[string]bool, len(places))
	out := places[:0]
	for _, p := range places {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
