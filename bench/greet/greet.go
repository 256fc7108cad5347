// Package greet is the trivial command every benchmark of the suite runs:
// natively, in a station module and in an Extism plug-in, so that the
// numbers differ only by how the call reaches it.
package greet

import (
	"errors"
	"strings"
)

// Input is the command's input document.
type Input struct {
	Name string `json:"name"`
}

// Output is the command's result document.
type Output struct {
	Greeting string `json:"greeting"`
}

// Greet returns the greeting for in.Name.
func Greet(in Input) (Output, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return Output{}, errors.New("name is required")
	}
	return Output{Greeting: "Hello, " + name + "!"}, nil
}

// In is the input every benchmark sends; Want is the result it expects.
const (
	In   = `{"name":"Ada"}`
	Want = `{"greeting":"Hello, Ada!"}`
)
