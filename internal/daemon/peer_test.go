//go:build linux

package daemon

import (
	"net"
	"net/netip"
	"os"
	"testing"
)

// TestPeerUID: the kernel's owner of the other end of a loopback
// connection is this process's user, over IPv4 and IPv6 (the dashboard's
// attack tests, internal/ui, show another user refused).
func TestPeerUID(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v (no such loopback here)", addr, err)
			continue
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := ln.Accept()
			accepted <- c
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s := <-accepted
		defer s.Close()
		uid, err := peerUID(s.LocalAddr(), s.RemoteAddr())
		if err != nil || uid != os.Getuid() {
			t.Errorf("%s: peer uid %d, %v; want %d", addr, uid, err, os.Getuid())
		}
		// A connection that is not there has no owner: refused, not
		// guessed.
		if _, err := peerUID(s.LocalAddr(), &net.TCPAddr{IP: s.RemoteAddr().(*net.TCPAddr).IP, Port: 1}); err == nil {
			t.Errorf("%s: an owner for a connection that does not exist", addr)
		}
	}
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:01BB": "127.0.0.1:443", // v4-mapped
	} {
		got, err := parseProcAddr([]byte(in))
		if err != nil || got != netip.MustParseAddrPort(want) {
			t.Errorf("parseProcAddr(%s) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "zz00007F:1F90", "0100007F:zz", "01007F:1F90"} {
		if _, err := parseProcAddr([]byte(bad)); err == nil {
			t.Errorf("parseProcAddr(%q): no error", bad)
		}
	}
}
