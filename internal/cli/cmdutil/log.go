package cmdutil

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/station-dev/station/internal/host"
)

// lineHandler writes log records as short lines a person reads:
// "station: module dave/x: network gate active — allow: api.stripe.com".
type lineHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Level
	attrs []slog.Attr
}

// NewLineHandler returns a handler that writes records at level and above
// to w as lines a person reads.
func NewLineHandler(w io.Writer, level slog.Level) slog.Handler {
	return &lineHandler{mu: &sync.Mutex{}, w: w, level: level}
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if r.Message == host.GuestLogMessage {
		// A module's own words: never "station: ...", always its id first.
		attrs := map[string]string{}
		for _, a := range h.attrs {
			attrs[a.Key] = a.Value.String()
		}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		// The host escaped the text already; TermText again, as for
		// everything a module supplies, is what this line relies on.
		fmt.Fprintf(&b, "[%s %s] %s\n", TermText(attrs["module"]), TermText(attrs["command"]), TermText(attrs["text"]))
		h.mu.Lock()
		defer h.mu.Unlock()
		_, err := io.WriteString(h.w, b.String())
		return err
	}
	b.WriteString("station: ")
	if r.Level >= slog.LevelWarn {
		b.WriteString(strings.ToLower(r.Level.String()) + ": ")
	}
	b.WriteString(TermText(r.Message)) // it may quote a hub's or a relay's words
	write := func(a slog.Attr) bool {
		if a.Key == "module" && strings.HasPrefix(r.Message, "module "+a.Value.String()+":") {
			return true // the station's own line already names it
		}
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &n
}

func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// maxLogSize is the size at which station.log is rotated to station.log.1.
const maxLogSize = 10 << 20

// openLog opens $STATION_HOME/station.log for appending, rotating it first
// when it is large. It returns nil when the log cannot be opened: logging to
// the file is best effort and never stops a command.
func openLog(home string) *os.File {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil
	}
	path := filepath.Join(home, "station.log")
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil
	}
	return f
}
