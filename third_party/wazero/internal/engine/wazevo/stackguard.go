package wazevo

import "unsafe"

// The stack guard of a goroutine is runtime.g.stackguard0, the word after
// runtime.g.stack (lo, hi): every Go function's prologue compares the stack
// pointer with it, at this fixed offset, so its place is part of the
// compiler's ABI. The runtime sets it to a value above any stack address
// (stackPreempt, stackFork, stackForceMove) to make the goroutine enter the
// scheduler at its next prologue: all of them have their top 16 bits set,
// which no user-space address has (compiled code reads those 16 bits).
const (
	stackGuardOffset   = 2 * unsafe.Sizeof(uintptr(0))
	stackGuardPoisoned = 0xffff_0000_0000_0000
)

// noStackGuard stands in for a goroutine's stack guard where it cannot be
// read: never poisoned.
var noStackGuard uint64

// currentStackGuard returns the address of the calling goroutine's stack
// guard.
func currentStackGuard() *uint64 {
	if g := getg(); g != nil {
		return (*uint64)(unsafe.Add(g, stackGuardOffset))
	}
	return &noStackGuard
}

// preemptRequested reports whether the Go runtime asked the goroutine
// whose stack guard is at sg to stop.
func preemptRequested(sg *uint64) bool {
	return sg != nil && *sg&stackGuardPoisoned != 0
}
