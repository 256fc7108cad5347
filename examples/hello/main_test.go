package main

import (
	"context"
	"errors"
	"testing"

	"github.com/station-dev/station/sdk"
)

func TestGreet(t *testing.T) {
	tests := []struct {
		name, input, want, wantErr string
	}{
		{name: "greets", input: `{"name":"Ada"}`, want: `{"greeting":"Hello, Ada!"}`},
		{name: "keeps html", input: `{"name":"<Ada>"}`, want: `{"greeting":"Hello, <Ada>!"}`},
		{name: "needs a name", input: `{}`, wantErr: "name is required"},
		{name: "unknown field", input: `{"nam":"Ada"}`, wantErr: `invalid input: json: unknown field "nam"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sdk.Invoke(context.Background(), "greet", []byte(tt.input))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Invoke(greet, %s) error = %v, want %q", tt.input, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Invoke(greet, %s) = %s, %v; want %s", tt.input, got, err, tt.want)
			}
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	_, err := sdk.Invoke(context.Background(), "wave", nil)
	if !errors.Is(err, sdk.ErrUnknownCommand) {
		t.Fatalf("Invoke(wave) error = %v, want ErrUnknownCommand", err)
	}
}
