// Package units renders quantities for people. Bytes is the one way the
// station writes a byte count — a limit in a message, a size in the CLI —
// in IEC binary units (KiB = 1024 B).
package units

import "strconv"

// names are the units Bytes uses, each 1024 times the one before.
var names = [...]string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// Bytes renders n bytes in IEC units:
//
//   - below 1 KiB, in bytes: "512 B";
//   - exactly, as a whole number of the largest unit that divides n, when
//     that takes at most four digits: "64 MiB", "1088 KiB" (a limit reads
//     as it was set);
//   - otherwise with one decimal, rounded, in the largest unit not above n:
//     "1.5 KiB", "11.8 MiB", and "1.0 MiB" rather than "1024.0 KiB" for
//     1 MiB less a byte.
//
// A negative n keeps its sign: "-2 KiB".
func Bytes(n int64) string {
	if n < 0 {
		// -n overflows for math.MinInt64, but its uint64 is the magnitude.
		return "-" + bytes(uint64(-n))
	}
	return bytes(uint64(n))
}

func bytes(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	for i := len(names) - 1; i > 0; i-- {
		if unit := uint64(1) << (10 * i); n%unit == 0 && n/unit < 10000 {
			return strconv.FormatUint(n/unit, 10) + " " + names[i]
		}
	}
	i := 1
	for i < len(names)-1 && n>>(10*(i+1)) > 0 {
		i++
	}
	s := strconv.FormatFloat(float64(n)/float64(uint64(1)<<(10*i)), 'f', 1, 64)
	if s == "1024.0" && i < len(names)-1 {
		s, i = "1.0", i+1
	}
	return s + " " + names[i]
}
