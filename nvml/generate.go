package nvml

//go:generate go run ../tools/gen -lib nvml
