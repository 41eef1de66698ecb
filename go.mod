module github.com/purecuda/purecuda

go 1.25.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/google/go-cmp v0.7.0
	golang.org/x/sys v0.43.0
)

require github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724

require gonum.org/v1/gonum v0.16.0
