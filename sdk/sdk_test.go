package sdk

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/sdk/abi"
)

type pair struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

func init() {
	Handle("add", func(ctx context.Context, in pair) (pair, error) { return pair{A: in.A + 1, B: in.B + "<&>"}, nil })
	Handle("fail", func(ctx context.Context, in pair) (*pair, error) { return nil, errors.New("it failed") })
	Handle("nothing", func(ctx context.Context, in struct{}) (any, error) { return nil, nil })
	Handle("boom", func(ctx context.Context, in struct{}) (int, error) { panic("kaboom") })
	HandleRaw("echo", func(ctx context.Context, in []byte) ([]byte, error) { return in, nil })
}

func TestInvoke(t *testing.T) {
	tests := []struct {
		command, input, want, wantErr string
	}{
		{command: "add", input: `{"a":1,"b":"x"}`, want: `{"a":2,"b":"x<&>"}`},
		{command: "add", input: " \n", want: `{"a":1,"b":"<&>"}`},
		{command: "add", input: `null`, want: `{"a":1,"b":"<&>"}`},
		{command: "add", input: `{"a":1,"c":2}`, wantErr: `invalid input: json: unknown field "c"`},
		{command: "add", input: `{"a":"1"}`, wantErr: `invalid input: json: cannot unmarshal string into Go struct field pair.a of type int`},
		{command: "add", input: `{"a":1}{"a":2}`, wantErr: `invalid input: data after the JSON document`},
		{command: "add", input: `{"a":1`, wantErr: `invalid input: unexpected EOF`},
		{command: "fail", input: `{}`, wantErr: "it failed"},
		{command: "nothing", input: ``, want: `null`},
		{command: "boom", input: ``, wantErr: "panic: kaboom"},
		{command: "echo", input: `not json`, want: `not json`},
		{command: "missing", input: ``, wantErr: `unknown command "missing" (commands: add, boom, echo, fail, nothing)`},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			got, err := Invoke(context.Background(), tt.command, []byte(tt.input))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Invoke(%s, %q) error = %v, want %q", tt.command, tt.input, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Invoke(%s, %q) = %s, %v; want %s", tt.command, tt.input, got, err, tt.want)
			}
		})
	}
}

func TestUnknownCommandIs(t *testing.T) {
	if _, err := Invoke(context.Background(), "missing", nil); !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("error %v is not ErrUnknownCommand", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"duplicate": func() { HandleRaw("echo", func(context.Context, []byte) ([]byte, error) { return nil, nil }) },
		"no name":   func() { HandleRaw("", func(context.Context, []byte) ([]byte, error) { return nil, nil }) },
		"nil":       func() { Handle[int, int]("nil", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		})
	}
}

func TestInvokeConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if out, err := Invoke(context.Background(), "add", []byte(`{"a":1}`)); err != nil || string(out) != `{"a":2,"b":"<&>"}` {
					t.Errorf("Invoke = %s, %v", out, err)
				}
			}
		})
	}
	wg.Wait()
}

func TestLogHandler(t *testing.T) {
	type line struct {
		level int32
		text  string
	}
	var got []line
	h := newLogHandler()
	send = func(level int32, b []byte) { got = append(got, line{level, string(b)}) }
	t.Cleanup(func() { send = writeLog })
	l := slog.New(h)
	l.Info("plain")
	l.Warn("with attrs", "id", "in_1", "n", 2)
	l.With("mod", "x").WithGroup("g").Error("grouped", "k", "two words")
	l.Debug(strings.Repeat("é", MaxLogLine))
	l.Log(context.Background(), slog.LevelError+4, "fatal-ish")
	l.Log(context.Background(), slog.LevelDebug-4, "trace")
	want := []line{
		{abi.LogInfo, "plain"},
		{abi.LogWarn, "with attrs id=in_1 n=2"},
		{abi.LogError, `grouped mod=x g.k="two words"`},
		{abi.LogDebug, strings.Repeat("é", (MaxLogLine-3)/2) + "..."},
		{abi.LogError, "fatal-ish"},
		{abi.LogDebug, "trace"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %d %.80q, want %d %.80q", i, got[i].level, got[i].text, want[i].level, want[i].text)
		}
	}
}

func TestHostError(t *testing.T) {
	e := &HostError{Status: abi.StatusDenied, Code: "denied", Message: "sandbox violation: x"}
	if !e.Denied() || e.Error() != "sandbox violation: x" {
		t.Errorf("HostError = %v, denied %v", e, e.Denied())
	}
	e = &HostError{Status: abi.StatusTimeout}
	if e.Denied() || e.Error() != "station: host call failed: timeout" {
		t.Errorf("HostError = %v, denied %v", e, e.Denied())
	}
}
