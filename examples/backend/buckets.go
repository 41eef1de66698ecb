package main

import (
	"errors"
	"math"
	"math/bits"

	"github.com/purecuda/purecuda/cuda"
)

// buckets is a backend's buffer pool: buffers of T by size class (powers
// of two, in elements), taken and given back by the program, on top of a
// driver pool (cuda.MemPool) that keeps its memory across
// synchronizations. A buffer given back serves the next request of its
// class with no driver call, and its address stays the same, which a
// captured graph needs: the graph's nodes hold the addresses of the
// buffers they were captured with.
//
// It is used by one goroutine (a backend's executor); give a buffer back
// only once the work that uses it is done or ordered before the work of
// its next user (here: one stream).
type buckets[T any] struct {
	pool   *cuda.MemPool
	free   map[int][]cuda.Slice[T] // by class
	misses int                     // buffers allocated from the driver pool
	hits   int                     // requests served from free
}

func newBuckets[T any](d cuda.Device) (*buckets[T], error) {
	pool, err := cuda.NewMemPool(d)
	if err != nil {
		return nil, err
	}
	// Keep everything freed to the pool: a backend's steps allocate the
	// same sizes again and again.
	if err := pool.SetReleaseThreshold(math.MaxUint64); err != nil {
		return nil, errors.Join(err, pool.Close())
	}
	return &buckets[T]{pool: pool, free: map[int][]cuda.Slice[T]{}}, nil
}

// class is the size class of n elements: the power of two at or above n.
func class(n int) int { return 1 << bits.Len(uint(n-1)) }

// get returns a buffer of at least n elements (its length is its class's).
func (b *buckets[T]) get(s *cuda.Stream, n int) (cuda.Slice[T], error) {
	c := class(n)
	if l := b.free[c]; len(l) > 0 {
		x := l[len(l)-1]
		b.free[c] = l[:len(l)-1]
		b.hits++
		return x, nil
	}
	b.misses++
	return cuda.AllocFrom[T](b.pool, s, c)
}

// put gives a buffer from get back.
func (b *buckets[T]) put(x cuda.Slice[T]) {
	c := x.Len()
	b.free[c] = append(b.free[c], x)
}

// close frees every buffer given back and the driver pool.
func (b *buckets[T]) close() error {
	var errs []error
	for _, l := range b.free {
		for _, x := range l {
			errs = append(errs, x.Free())
		}
	}
	b.free = nil
	return errors.Join(append(errs, b.pool.Close())...)
}
