package nccl

//go:generate go run ../tools/gen -lib nccl
