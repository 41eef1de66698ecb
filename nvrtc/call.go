package nvrtc

import "github.com/purecuda/purecuda/internal/dl"

// frame is the head of the argument block of an NVRTC call: the generated
// wrappers declare, per call, a struct that embeds it and follows it with
// the argument words, on their own stack (see package internal/dl).
type frame = dl.Frame
