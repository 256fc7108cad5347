// Package clitest holds what the tests of the station's commands share: the
// hostile text a hub or a module may supply and the check that it reaches
// the terminal escaped, a compilation cache shared by every test of a
// binary, and a runner that executes a command line in buffers.
package clitest

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// Hostile is what a hostile hub or module puts in every string it
// supplies: erase the line, return to its start, set the window title
// (OSC 0 ... BEL), backspace, a right-to-left override, CSI as a C1
// control, DEL, a byte that is not UTF-8, and a newline and a tab before a
// line that pretends to be the station's.
const Hostile = "\x1b[2K\r\x1b]0;pwned\x07\b\u202e\u009b2J\x7f\xff\n\tstation: logged in as root"

// RawControl returns the first character of s a terminal would act on, or
// "": a control character other than the newline, DEL, a C1 control, a line
// separator, a bidi control, or a byte that is not UTF-8.
func RawControl(s string) string {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return fmt.Sprintf("byte %#x at %d", s[i], i)
		case r < 0x20 && r != '\n', r == 0x7f, r >= 0x80 && r < 0xa0,
			r == 0x2028, r == 0x2029, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U at %d", r, i)
		}
		i += size
	}
	return ""
}

// Forged reports whether a line of out starts with the hostile text's
// pretend station line: a newline the text carried started a line of its
// own at the left margin.
func Forged(out string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "station: logged in") {
			return true
		}
	}
	return false
}

// CheckPrinted fails t unless out shows the hostile text escaped: nothing
// in it a terminal acts on, no line of it standing on its own, and the text
// itself still visible.
func CheckPrinted(t testing.TB, what, out string) {
	t.Helper()
	if c := RawControl(out); c != "" {
		t.Errorf("%s: %s reaches the terminal:\n%q", what, c, out)
	}
	if Forged(out) {
		t.Errorf("%s: a line of the hostile text stands on its own:\n%s", what, out)
	}
	if !strings.Contains(out, "pwned") {
		t.Errorf("%s: the hostile text is not shown at all (want it escaped):\n%q", what, out)
	}
}

// Factory returns a Factory with empty streams and an empty environment,
// for tests that parse flags.
func Factory() *cmdutil.Factory {
	return cmdutil.New(cmdutil.IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
}

// Parse executes c with args as the CLI would (flag errors are usage
// errors), with its output discarded, and returns its error: with a run
// hook in place of the command's work, it checks flag and argument parsing.
func Parse(c *cobra.Command, args ...string) error {
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.UsageError{Err: err} })
	c.SetArgs(args)
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	c.SilenceErrors, c.SilenceUsage = true, true
	return c.Execute()
}

// FlagCase is a command line and what it must parse to: the options (their
// dependencies aside), or, when Code is not 0, the exit code of its error.
type FlagCase[O any] struct {
	Args []string
	Want O
	Code int
}

// CheckFlags parses each case's command line with the command newCmd makes
// around a run hook, and checks the exit code or the options the hook got.
// The options' dependencies — their func, interface and pointer fields —
// must all be set by the constructor, but for those named in optional
// (which default when nil), and are then left out of the comparison.
func CheckFlags[O any](t *testing.T, newCmd func(runF func(*O) error) *cobra.Command, cases []FlagCase[O], optional ...string) {
	t.Helper()
	for _, tc := range cases {
		var got *O
		err := Parse(newCmd(func(o *O) error { got = o; return nil }), tc.Args...)
		if code := cmdutil.ExitCode(err); code != tc.Code {
			t.Errorf("%q: exit %d (%v), want %d", tc.Args, code, err, tc.Code)
			continue
		}
		if tc.Code != 0 {
			continue
		}
		v := reflect.ValueOf(got).Elem()
		for i := range v.NumField() {
			switch f := v.Field(i); f.Kind() {
			case reflect.Func, reflect.Interface, reflect.Pointer:
				if name := v.Type().Field(i).Name; f.IsNil() && !slices.Contains(optional, name) {
					t.Errorf("%q: the constructor left %s unset", tc.Args, name)
				}
				f.SetZero()
			}
		}
		if !reflect.DeepEqual(*got, tc.Want) {
			t.Errorf("%q: options %+v, want %+v", tc.Args, *got, tc.Want)
		}
	}
}
