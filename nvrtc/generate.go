package nvrtc

//go:generate go run ../tools/gen -lib nvrtc
