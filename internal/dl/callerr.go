package dl

// CallError is the error of a library call that failed, made by one of
// this module's packages on its caller's behalf: it names the C function
// and keeps what the call returned (a Result, a Return, a *SymbolError),
// which errors.Is and errors.As reach.
//
// Every package names a failed call through Failed, and package cuda
// through its wrapper on top of it (which adds a lost context's case),
// so that the texts read the same everywhere: "pkg: cuMemAlloc: ..." or,
// where the caller adds its own words in front, "cuMemAlloc: ...".
type CallError struct {
	Pkg  string // the package that made the call ("cuda", "cublas"); "" when its caller's text names it
	Call string // the C name of the function, as cuMemAlloc or cublasSgemm_v2, and what it was called on where that helps
	Err  error  // what the call returned
}

// Error returns "Pkg: Call: " and Err's text, without "Pkg: " when Pkg is
// empty.
func (e *CallError) Error() string {
	s := e.Call + ": " + e.Err.Error()
	if e.Pkg != "" {
		s = e.Pkg + ": " + s
	}
	return s
}

// Unwrap returns what the call returned.
func (e *CallError) Unwrap() error { return e.Err }

// Failed names err as the failure of the C function call, made by package
// pkg ("" when the caller's own text names the package): it returns a
// *CallError. A nil err stays nil.
func Failed(pkg, call string, err error) error {
	if err == nil {
		return nil
	}
	return &CallError{Pkg: pkg, Call: call, Err: err}
}
