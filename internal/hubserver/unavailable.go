package hubserver

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnavailable marks a failure of a backend the hub depends on — its
// database or its blob storage — that is not the request's fault and may
// pass (a database restarting, a registry down or overloaded). The request
// is answered 503 unavailable with a Retry-After instead of 500 internal,
// so that clients retry and load balancers and operators see what it is.
var ErrUnavailable = errors.New("a backend of the hub is unavailable")

// retryUnavailable is the Retry-After of an unavailable answer, in seconds.
const retryUnavailable = 5

// unavailable wraps err so that it is ErrUnavailable too, with err's
// message unchanged.
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return unavailableError{err}
}

type unavailableError struct{ error }

func (e unavailableError) Unwrap() []error { return []error{e.error, ErrUnavailable} }

// isUnavailable reports whether err is a backend's failure to answer: one
// marked ErrUnavailable (the blob storage marks its own), a connection to
// PostgreSQL that could not be made or broke, or PostgreSQL refusing work
// for now (shutting down, starting, out of connections, a statement
// cancelled by its timeout).
func isUnavailable(err error) bool {
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var ce clientError
	if errors.As(err, &ce) { // the client's connection, not a backend's
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin or crash shutdown, cannot connect now
			pe.Code == "53300", pe.Code == "53400", // too many connections, configuration limit exceeded
			pe.Code == "57014": // query_canceled: the statement timeout
			return true
		}
		return false
	}
	// A connection that broke mid-answer ends in an unexpected EOF or a
	// network error; the request's own body marks its failures as the
	// client's (clientReader, and decode's bad_request), so these are a
	// backend's.
	var cne *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &cne) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}
