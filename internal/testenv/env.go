package testenv

// Env is a fake environment for a library's open or search: the value of
// each name in vars, "" for any other.
func Env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}
