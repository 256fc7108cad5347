package sdk

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"unicode/utf8"

	"github.com/station-dev/station/sdk/abi"
)

// MaxLogLine is the longest log line the SDK sends; longer lines are cut.
// It is the station's default limit (docs/abi.md, "Limits").
const MaxLogLine = 64 << 10

var logger = slog.New(newLogHandler())

// send delivers a log line; tests replace it.
var send = writeLog

// Logger returns a logger whose records go to the station's module log, one
// line per record: the message followed by the attributes in slog's text
// form. The station stamps the time and the module; the record's level maps
// to the nearest abi.Log* level.
func Logger() *slog.Logger { return logger }

// Log writes one record to the station's module log, as Logger().Log does.
func Log(level slog.Level, msg string, args ...any) {
	logger.Log(context.Background(), level, msg, args...)
}

// logHandler formats records with a slog.TextHandler (minus time, level and
// message, which the line carries otherwise) and sends each as one line.
type logHandler struct {
	out   *logBuffer
	inner slog.Handler
}

// logBuffer is the output of every TextHandler derived from one logHandler;
// mu serializes format-and-send.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) { return b.buf.Write(p) }

func newLogHandler() *logHandler {
	out := new(logBuffer)
	inner := slog.NewTextHandler(out, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
				return slog.Attr{}
			}
			return a
		},
	})
	return &logHandler{out: out, inner: inner}
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	b := &h.out.buf
	b.Reset()
	b.WriteString(r.Message)
	mark := b.Len()
	b.WriteByte(' ')
	if err := h.inner.Handle(ctx, r); err != nil {
		return err
	}
	line := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if len(line) == mark+1 {
		line = line[:mark] // no attributes
	}
	if len(line) > MaxLogLine {
		n := MaxLogLine - len("...")
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line = append(line[:n], "..."...)
	}
	send(logLevel(r.Level), line)
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{out: h.out, inner: h.inner.WithAttrs(as)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{out: h.out, inner: h.inner.WithGroup(name)}
}

// logLevel maps a slog level to the nearest abi.Log* level at or below it.
func logLevel(l slog.Level) int32 {
	switch {
	case l >= slog.LevelError:
		return abi.LogError
	case l >= slog.LevelWarn:
		return abi.LogWarn
	case l >= slog.LevelInfo:
		return abi.LogInfo
	default:
		return abi.LogDebug
	}
}
