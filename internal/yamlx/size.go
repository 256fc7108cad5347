package yamlx

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSize parses a byte size as the station's YAML files write it: a
// non-negative integer number of bytes, optionally followed by B, KiB, MiB
// or GiB ("64MiB", "1GiB", "65536"). Decimal units (KB, MB, GB) are refused
// so that "64MB" cannot silently mean 64 MiB.
func ParseSize(s string) (uint64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%s is not a size (write it like 64MiB or 1GiB)", Quote(s))
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is too large", Quote(s))
	}
	unit := strings.TrimPrefix(s[i:], " ")
	var mult uint64
	switch unit {
	case "", "B":
		mult = 1
	case "KiB":
		mult = 1 << 10
	case "MiB":
		mult = 1 << 20
	case "GiB":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("%s has an unknown unit %s (use B, KiB, MiB or GiB)", Quote(s), Quote(unit))
	}
	if n > (1<<64-1)/mult {
		return 0, fmt.Errorf("%s is too large", Quote(s))
	}
	return n * mult, nil
}

// FormatSize renders n as ParseSize reads it, in the largest unit that
// divides it exactly ("64MiB", "1536KiB", "100B").
func FormatSize(n uint64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return strconv.FormatUint(n>>30, 10) + "GiB"
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatUint(n>>20, 10) + "MiB"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatUint(n>>10, 10) + "KiB"
	}
	return strconv.FormatUint(n, 10) + "B"
}

// FormatDuration renders t as a person writes it in a file: "1h", "10m",
// "1m30s", "1.5s", without the zero units of time.Duration.String ("1h0m0s").
func FormatDuration(t time.Duration) string {
	s := t.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
