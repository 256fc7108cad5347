package sproc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/station-dev/station/sdk/abi"
)

// answer makes send return resp for every request.
func answer(t *testing.T, resp abi.ProcessResponse) {
	t.Helper()
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	old := send
	send = func([]byte) (abi.Status, []byte) { return abi.StatusOK, b }
	t.Cleanup(func() { send = old })
}

// TestTruncationIsNotSilent attacks the SDK's view of a cut output: a
// module author who calls Run or Output as the package doc shows gets an
// error matching ErrTruncated, never the first megabyte as a success, unless
// the Cmd opted into partial output.
func TestTruncationIsNotSilent(t *testing.T) {
	const limit = 1 << 20
	full := abi.ProcessResponse{Stdout: []byte("all"), Limit: limit}
	outCut := abi.ProcessResponse{Stdout: []byte("first"), Truncated: true, Limit: limit, StdoutDropped: 7}
	errCut := abi.ProcessResponse{Stdout: []byte("all"), Truncated: true, Limit: limit, StderrDropped: 9}
	flagOnly := abi.ProcessResponse{Stdout: []byte("first"), Truncated: true} // a station without the counts
	cases := []struct {
		name    string
		resp    abi.ProcessResponse
		partial bool
		output  bool // Output rather than Run
		wantCut bool // the error matches ErrTruncated
	}{
		{"complete run", full, false, false, false},
		{"complete output", full, false, true, false},
		{"stdout cut, run", outCut, false, false, true},
		{"stdout cut, output", outCut, false, true, true},
		{"stderr cut, run", errCut, false, false, true},
		{"stderr cut, output", errCut, false, true, false},
		{"flag only, run", flagOnly, false, false, true},
		{"flag only, output", flagOnly, false, true, true},
		{"stdout cut, partial run", outCut, true, false, false},
		{"stdout cut, partial output", outCut, true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answer(t, c.resp)
			cmd := Command("git", "log")
			cmd.Partial = c.partial
			var got []byte
			var err error
			if c.output {
				got, err = cmd.Output(context.Background())
			} else {
				var r *Result
				r, err = cmd.Run(context.Background())
				if r == nil {
					t.Fatalf("Run returned no result (err %v)", err)
				}
				got = r.Stdout
				if r.Truncated != c.resp.Truncated || r.Limit != c.resp.Limit || r.StdoutDropped != c.resp.StdoutDropped || r.StderrDropped != c.resp.StderrDropped {
					t.Errorf("result %+v does not carry the response's truncation %+v", r, c.resp)
				}
			}
			if string(got) != string(c.resp.Stdout) {
				t.Errorf("stdout = %q, want the partial %q", got, c.resp.Stdout)
			}
			if errors.Is(err, ErrTruncated) != c.wantCut || (!c.wantCut && err != nil) {
				t.Fatalf("err = %v; want ErrTruncated: %v", err, c.wantCut)
			}
			var te *TruncatedError
			if c.wantCut && (!errors.As(err, &te) || te.Result == nil || te.Program != "git") {
				t.Errorf("err = %#v; want a *TruncatedError naming git with the result", err)
			}
		})
	}
}

func TestTruncatedErrorMessage(t *testing.T) {
	cases := []struct {
		r    Result
		want string
	}{
		{Result{Limit: 1000, StdoutDropped: 5}, "sproc: git: output truncated at the station's limit of 1000 bytes per stream: stdout by 5 bytes over it"},
		{Result{Limit: 1000, StdoutDropped: 5, StderrDropped: 6}, "sproc: git: output truncated at the station's limit of 1000 bytes per stream: stdout by 5 bytes and stderr by 6 bytes over it"},
		{Result{Limit: 1000}, "sproc: git: output truncated at the station's limit of 1000 bytes per stream"},
	}
	for _, c := range cases {
		if got := (&TruncatedError{Program: "git", Result: &c.r}).Error(); got != c.want || !strings.Contains(got, "truncated") {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
}
