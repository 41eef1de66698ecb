//go:build !gpu && linux

package nccl_test

// The stand-in runs FP8 Avg and PreMulSum on one rank as on several
// (coll_test.go's refusedOnOneRank asks only the real library).
const oneRankFP8Refused = false
