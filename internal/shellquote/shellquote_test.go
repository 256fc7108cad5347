package shellquote

import (
	"os/exec"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, s := range []string{"plain/path-1.x", "", "two words", "it's", "$HOME", "a\nb", "`x`", `back\slash`, "é"} {
		q := Quote(s)
		out, err := exec.Command("sh", "-c", "printf %s "+q).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		if string(out) != s {
			t.Errorf("Quote(%q) = %s, which the shell reads as %q", s, q, out)
		}
	}
}
