package netgate

import "net/netip"

// Classify names the special range ip falls in, or returns "" for an
// ordinary public address. The gate refuses to connect to any address with a
// non-empty class unless the operator grants a prefix that contains it.
//
// The classes are "loopback", "private" (RFC 1918), "unique-local"
// (fc00::/7), "site-local", "link-local", "metadata" (cloud instance
// metadata endpoints such as 169.254.169.254), "unspecified", "multicast",
// "broadcast", "cgnat" (100.64.0.0/10), "benchmarking", "documentation",
// "reserved" (everything else outside the global unicast space) and
// "invalid" for the zero Addr.
//
// Addresses that embed an IPv4 address are classified by it and the class
// says which form carried it: "ipv4-mapped loopback" (::ffff:127.0.0.1),
// "nat64 private" (64:ff9b::/96, 64:ff9b:1::/48), "6to4 metadata"
// (2002::/16), "teredo loopback" (2001::/32, server or client address) and
// "ipv4-compatible loopback" (the deprecated ::/96 form). A zone is ignored.
func Classify(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.WithZone("")
	if ip.Is4() {
		return classify4(ip.As4())
	}
	if ip.Is4In6() {
		return embedded("ipv4-mapped", ip.Unmap().As4())
	}
	b := ip.As16()
	switch {
	case ip == netip.IPv6Unspecified():
		return "unspecified"
	case ip == netip.IPv6Loopback():
		return "loopback"
	case nat64.Contains(ip):
		return embedded("nat64", v4(b[12:16]))
	case nat64Local.Contains(ip):
		// RFC 8215 leaves the prefix length inside 64:ff9b:1::/48 to the
		// network: check the /96 position and the RFC 6052 /48 position,
		// ignoring one that is all zeros when the other is not.
		a96, a48 := v4(b[12:16]), [4]byte{b[6], b[7], b[9], b[10]}
		switch {
		case a48 == [4]byte{}:
			return embedded("nat64", a96)
		case a96 == [4]byte{}:
			return embedded("nat64", a48)
		}
		if c := embedded("nat64", a96); c != "" {
			return c
		}
		return embedded("nat64", a48)
	case ipv4Compatible.Contains(ip):
		if c := embedded("ipv4-compatible", v4(b[12:16])); c != "" {
			return c
		}
		return "reserved"
	case sixToFour.Contains(ip):
		return embedded("6to4", v4(b[2:6]))
	case teredo.Contains(ip):
		if c := embedded("teredo", v4(b[4:8])); c != "" {
			return c
		}
		return embedded("teredo", [4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	case ip == awsMetadata6:
		return "metadata"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case siteLocal.Contains(ip):
		return "site-local"
	case uniqueLocal.Contains(ip):
		return "unique-local"
	case ip.IsMulticast():
		return "multicast"
	case documentation6.Contains(ip), documentation6b.Contains(ip):
		return "documentation"
	case benchmarking6.Contains(ip):
		return "benchmarking"
	case !globalUnicast.Contains(ip), ietfProtocol6.Contains(ip):
		return "reserved"
	}
	return ""
}

var (
	nat64           = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local      = netip.MustParsePrefix("64:ff9b:1::/48")
	ipv4Compatible  = netip.MustParsePrefix("::/96")
	sixToFour       = netip.MustParsePrefix("2002::/16")
	teredo          = netip.MustParsePrefix("2001::/32")
	siteLocal       = netip.MustParsePrefix("fec0::/10")
	uniqueLocal     = netip.MustParsePrefix("fc00::/7")
	documentation6  = netip.MustParsePrefix("2001:db8::/32")
	documentation6b = netip.MustParsePrefix("3fff::/20")
	benchmarking6   = netip.MustParsePrefix("2001:2::/48")
	ietfProtocol6   = netip.MustParsePrefix("2001::/23")
	globalUnicast   = netip.MustParsePrefix("2000::/3")
	awsMetadata6    = netip.MustParseAddr("fd00:ec2::254")
)

func v4(b []byte) [4]byte { return [4]byte{b[0], b[1], b[2], b[3]} }

// embedded classifies an IPv4 address carried inside an IPv6 one.
func embedded(form string, a [4]byte) string {
	if c := classify4(a); c != "" {
		return form + " " + c
	}
	return ""
}

func classify4(a [4]byte) string {
	switch {
	case a == [4]byte{169, 254, 169, 254}, // AWS, GCP, Azure, OpenStack, ...
		a == [4]byte{100, 100, 100, 200}, // Alibaba Cloud
		a == [4]byte{168, 63, 129, 16}:   // Azure WireServer
		return "metadata"
	case a == [4]byte{0, 0, 0, 0}:
		return "unspecified"
	case a[0] == 0: // "this network"
		return "reserved"
	case a[0] == 127:
		return "loopback"
	case a[0] == 10, a[0] == 172 && a[1]&0xf0 == 16, a[0] == 192 && a[1] == 168:
		return "private"
	case a[0] == 100 && a[1]&0xc0 == 64:
		return "cgnat"
	case a[0] == 169 && a[1] == 254:
		return "link-local"
	case a[0] == 192 && a[1] == 0 && a[2] == 2,
		a[0] == 198 && a[1] == 51 && a[2] == 100,
		a[0] == 203 && a[1] == 0 && a[2] == 113:
		return "documentation"
	case a[0] == 198 && a[1]&0xfe == 18:
		return "benchmarking"
	case a[0] == 192 && a[1] == 0 && a[2] == 0, // IETF protocol assignments
		a[0] == 192 && a[1] == 88 && a[2] == 99: // 6to4 relay anycast
		return "reserved"
	case a == [4]byte{255, 255, 255, 255}:
		return "broadcast"
	case a[0] >= 240:
		return "reserved"
	case a[0] >= 224:
		return "multicast"
	}
	return ""
}
