package execgate

import (
	"bytes"
	"testing"
)

// The output cap on its own, without starting a program (so on every
// platform and for every user): the first max bytes are kept across writes,
// every byte past them is counted, and the writer never reports a short
// write (which would make the copy from the child's pipe fail).
func TestCappedCountsWhatItDrops(t *testing.T) {
	cases := []struct {
		name     string
		max      int64
		writes   []int
		wantKept int
		wantDrop int64
	}{
		{"under", 10, []int{3, 4}, 7, 0},
		{"exactly", 10, []int{6, 4}, 10, 0},
		{"over in one write", 10, []int{25}, 10, 15},
		{"over across writes", 10, []int{6, 6, 6}, 10, 8},
		{"full, then more", 10, []int{10, 1, 0, 5}, 10, 6},
		{"no room at all", 0, []int{3}, 0, 3},
	}
	for _, c := range cases {
		w := &capped{max: c.max}
		var all []byte
		for i, n := range c.writes {
			p := bytes.Repeat([]byte{byte('a' + i)}, n)
			all = append(all, p...)
			if got, err := w.Write(p); got != n || err != nil {
				t.Fatalf("%s: Write(%d bytes) = %d, %v", c.name, n, got, err)
			}
		}
		if !bytes.Equal(w.buf, all[:c.wantKept]) || w.dropped != c.wantDrop || int64(len(w.buf))+w.dropped != int64(len(all)) {
			t.Errorf("%s: kept %d bytes, dropped %d; want the first %d, %d", c.name, len(w.buf), w.dropped, c.wantKept, c.wantDrop)
		}
	}
}
