package nvjitlink

//go:generate go run ../tools/gen -lib nvjitlink
