package hostmem

// OwnerTick is the shortest time between two rounds of the owner's event
// queries (owner.go), for the tests that bound their rate.
const OwnerTick = minTick
