package daemon

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
)

// peerUID returns the uid of the socket at the other end of a loopback TCP
// connection: the row of /proc/net/tcp (or tcp6) whose local address is
// the connection's remote one and whose remote address is its local one.
// The kernel writes the uid of the socket's creator there.
func peerUID(local, remote net.Addr) (int, error) {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return -1, errPeerUnknown
	}
	la, _ := netip.AddrFromSlice(l.IP)
	ra, _ := netip.AddrFromSlice(r.IP)
	want := [2]netip.AddrPort{netip.AddrPortFrom(ra.Unmap(), uint16(r.Port)), netip.AddrPortFrom(la.Unmap(), uint16(l.Port))}
	file := "/proc/net/tcp"
	if want[0].Addr().Is6() {
		file = "/proc/net/tcp6"
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return -1, fmt.Errorf("read %s: %w", file, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
		f := bytes.Fields(sc.Bytes())
		if len(f) < 8 {
			continue
		}
		src, err1 := parseProcAddr(f[1])
		dst, err2 := parseProcAddr(f[2])
		if err1 != nil || err2 != nil || src != want[0] || dst != want[1] {
			continue
		}
		uid, err := strconv.Atoi(string(f[7]))
		if err != nil {
			return -1, fmt.Errorf("%s: uid %q", file, f[7])
		}
		return uid, nil
	}
	return -1, fmt.Errorf("no socket %s→%s in %s", want[0], want[1], file)
}

// parseProcAddr reads "0100007F:1F90" (IPv4) or 32 hex digits and a port
// (IPv6): the address as the kernel's 32-bit words in host order, the
// port in hex.
func parseProcAddr(s []byte) (netip.AddrPort, error) {
	i := bytes.IndexByte(s, ':')
	if i < 0 {
		return netip.AddrPort{}, fmt.Errorf("no port in %q", s)
	}
	raw := make([]byte, hex.DecodedLen(i))
	if _, err := hex.Decode(raw, s[:i]); err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	for w := 0; w < len(raw); w += 4 {
		binary.BigEndian.PutUint32(raw[w:], binary.NativeEndian.Uint32(raw[w:]))
	}
	port, err := strconv.ParseUint(string(s[i+1:]), 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q", s)
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}
