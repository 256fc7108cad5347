// Package kernels is the compute the suite measures in every runtime (issue:
// module code at full speed): the same Go functions natively, in the
// station guest under bare wazero and under the station, and in the Extism
// plug-in. Each works on input made once, deterministically, outside what
// is timed, and returns a checksum the benchmarks compare with the native
// result.
package kernels

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
)

// The sizes the issue names.
const (
	SHA256Bytes = 64 << 10 // SHA-256 of 64 KiB
	JSONBytes   = 10 << 10 // encoding/json decoding a document of about 10 KB
	SortInts    = 10_000   // sorting 10,000 ints
	LoopN       = 100_000  // a tight loop of 100,000 iterations
)

// Names are the kernels, as the benchmarks and the guests' commands name them.
var Names = []string{"sha256", "json", "sort", "loop"}

// Run runs the named kernel and returns its checksum; ok is false for an
// unknown name.
func Run(name string) (sum uint32, ok bool) {
	switch name {
	case "sha256":
		return SHA256(), true
	case "json":
		return JSON(), true
	case "sort":
		return Sort(), true
	case "loop":
		return Loop(LoopN), true
	}
	return 0, false
}

// Result is a kernel's checksum as its guests return it: a JSON number.
func Result(sum uint32) []byte { return strconv.AppendUint(nil, uint64(sum), 10) }

type record struct {
	ID     int      `json:"id"`
	Name   string   `json:"name"`
	Email  string   `json:"email"`
	Active bool     `json:"active"`
	Score  float64  `json:"score"`
	Tags   []string `json:"tags"`
}

var input = sync.OnceValue(func() (in struct {
	bytes []byte
	doc   []byte
	ints  []int
	work  []int
}) {
	x := uint64(0x9e3779b97f4a7c15)
	next := func() uint64 { // xorshift64*
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		return x * 0x2545f4914f6cdd1d
	}
	in.bytes = make([]byte, SHA256Bytes)
	for i := 0; i < len(in.bytes); i += 8 {
		binary.LittleEndian.PutUint64(in.bytes[i:], next())
	}
	var recs []record
	for len(in.doc) < JSONBytes {
		n := len(recs)
		recs = append(recs, record{
			ID: n, Name: "customer " + strconv.Itoa(n), Email: "c" + strconv.Itoa(n) + "@example.com",
			Active: n%3 == 0, Score: float64(next()%10000) / 100, Tags: []string{"tier-" + strconv.Itoa(n%4), "eu"},
		})
		in.doc, _ = json.Marshal(recs)
	}
	in.ints = make([]int, SortInts)
	for i := range in.ints {
		in.ints[i] = int(next() >> 1)
	}
	in.work = make([]int, SortInts)
	return in
})

// SHA256 hashes 64 KiB.
func SHA256() uint32 {
	sum := sha256.Sum256(input().bytes)
	return binary.LittleEndian.Uint32(sum[:])
}

// JSON decodes a document of about 10 KB (an array of records) with
// encoding/json.
func JSON() uint32 {
	var recs []record
	if err := json.Unmarshal(input().doc, &recs); err != nil {
		panic(err)
	}
	var sum uint32
	for _, r := range recs {
		sum = sum*31 + uint32(r.ID) + uint32(len(r.Email)) + uint32(r.Score)
	}
	return sum
}

// Sort sorts a copy of 10,000 ints.
func Sort() uint32 {
	in := input()
	copy(in.work, in.ints)
	slices.Sort(in.work)
	return uint32(in.work[0]) ^ uint32(in.work[len(in.work)/2]) ^ uint32(in.work[len(in.work)-1])
}

// Loop is a tight loop of n iterations: nothing but the loop.
func Loop(n int) uint32 {
	s := uint32(0)
	for i := 0; i < n; i++ {
		s = s*3 + uint32(i)
	}
	return s
}

// DocBytes is the size of the JSON kernel's document.
func DocBytes() int { return len(input().doc) }
