package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// plainRunSlow is PlainRun one byte at a time.
func plainRunSlow(b []byte) int {
	for i, c := range b {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return i
		}
	}
	return len(b)
}

func TestPlainRun(t *testing.T) {
	for _, s := range []string{"", "a", "abcdefgh", "abcdefghi", "abcdefg\"", "abcdefgh\\", "\x1f", "0123456\x7f89", "héllo, world", strings.Repeat("x", 100) + "\n", "       \x00"} {
		if got, want := PlainRun([]byte(s)), plainRunSlow([]byte(s)); got != want {
			t.Errorf("PlainRun(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestStr(t *testing.T) {
	for _, tt := range []struct {
		doc, want string
		ok        bool
		rest      int // bytes left after the string
	}{
		{`"abc" `, "abc", true, 1},
		{`""`, "", true, 0},
		{`"a long string past eight bytes, é included"`, "a long string past eight bytes, é included", true, 0},
		{`"esc\"aped"`, "", false, 0},
		{`"tab	in"`, "", false, 0},
		{"\"\xff\"", "", false, 0},
		{`"open`, "", false, 0},
		{`abc`, "", false, 0},
	} {
		s := New([]byte(tt.doc))
		got, ok := s.Str()
		if ok != tt.ok || ok && (string(got) != tt.want || len(tt.doc)-s.i != tt.rest) {
			t.Errorf("Str(%q) = %q, %v (at %d), want %q, %v", tt.doc, got, ok, s.i, tt.want, tt.ok)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, tt := range []struct {
		doc, tok    string
		integer, ok bool
	}{
		{"0", "0", true, true},
		{"-12,", "-12", true, true},
		{"01", "0", true, true}, // the caller finds 1 where it wants a delimiter
		{"1.5e-3}", "1.5e-3", false, true},
		{"2E+10", "2E+10", false, true},
		{"-", "", false, false},
		{"1.", "", false, false},
		{"1e", "", false, false},
		{".5", "", false, false},
		{"+1", "", false, false},
	} {
		s := New([]byte(tt.doc))
		tok, integer, ok := s.Number()
		if tok != tt.tok || integer != tt.integer || ok != tt.ok {
			t.Errorf("Number(%q) = %q, %v, %v; want %q, %v, %v", tt.doc, tok, integer, ok, tt.tok, tt.integer, tt.ok)
		}
	}
}

func TestEnd(t *testing.T) {
	s := New([]byte(" \t\r\n"))
	if !s.End() {
		t.Error("End() on white space = false")
	}
	s = New([]byte(" null x"))
	s.Space()
	if !s.Null() || s.End() {
		t.Error(`" null x": want null, then not the end`)
	}
}

// FuzzScanner: PlainRun agrees with a byte-by-byte loop, Str accepts only
// a string that encoding/json reads as the same bytes, and Number only a
// valid JSON number.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`"abc"`, `"é\u00e9"`, "12.5e3", "-0", `"12345678\"`, "\"\x7f\x80\"", "1.e5"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := PlainRun(b), plainRunSlow(b); got != want {
			t.Fatalf("PlainRun(%q) = %d, want %d", b, got, want)
		}
		s := New(b)
		if str, ok := s.Str(); ok {
			var want string
			if err := json.Unmarshal(b[:s.i], &want); err != nil || want != string(str) {
				t.Fatalf("Str(%q) = %q; encoding/json reads %q, %v", b, str, want, err)
			}
		}
		s = New(b)
		if tok, _, ok := s.Number(); ok && !json.Valid([]byte(tok)) {
			t.Fatalf("Number(%q) = %q, not a JSON number", b, tok)
		}
	})
}
