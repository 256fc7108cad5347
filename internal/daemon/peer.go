package daemon

import (
	"context"
	"errors"
	"net"
	"strconv"
)

// The daemon answers only its own user. The token and the dashboard's
// session cookie say who may drive it, but another user of the machine
// can connect to a loopback port too, and a secret that leaks to them —
// a sign-in link in a browser's command line, a cookie a browser sends to
// every port of 127.0.0.1 — would then be enough. So the daemon asks the
// kernel which user opened the other end of each connection (peerUID) and
// refuses every request on a connection that is not its own user's: the
// uid is the kernel's, not anything the peer says. See RATIONALE.md, "Why
// does the daemon ask the kernel who is connecting?".

// errPeerUnknown is peerUID's answer where the platform does not say.
var errPeerUnknown = errors.New("the owner of a loopback connection cannot be read on this platform")

type peerKey struct{}

// peer is what the daemon learned of a connection's other end.
type peer struct {
	uid int
	err error // why the uid is not known
}

// connContext records the connection's peer in its context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	uid, err := peerUID(c.LocalAddr(), c.RemoteAddr())
	return context.WithValue(ctx, peerKey{}, peer{uid: uid, err: err})
}

// checkPeer returns why a request on this connection is refused, or "".
// Where the platform cannot say who the peer is, it admits: the token and
// the session still decide (docs/security.md, known gaps).
func checkPeer(ctx context.Context, own int) string {
	p, ok := ctx.Value(peerKey{}).(peer)
	switch {
	case !ok:
		return "" // a server built without connContext (tests of handlers)
	case errors.Is(p.err, errPeerUnknown):
		return ""
	case p.err != nil:
		return "who opened this connection could not be read (" + p.err.Error() + "): refused"
	case p.uid != own:
		return "this connection was opened by another user of this machine (uid " + strconv.Itoa(p.uid) + "); the daemon answers only its own user"
	}
	return ""
}
