package netgate

import (
	"net/netip"
	"testing"
)

// classifyCases are the table for Classify; they also seed FuzzClassify.
var classifyCases = []struct {
	ip   string
	want string
}{
	{"8.8.8.8", ""},
	{"1.1.1.1", ""},
	{"93.184.216.34", ""},
	{"2606:4700::1111", ""},
	{"0.0.0.0", "unspecified"},
	{"0.1.2.3", "reserved"},
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"10.0.0.1", "private"},
	{"172.16.0.1", "private"},
	{"172.31.255.255", "private"},
	{"172.32.0.1", ""},
	{"192.168.1.1", "private"},
	{"169.254.169.254", "metadata"},
	{"100.100.100.200", "metadata"},
	{"168.63.129.16", "metadata"},
	{"169.254.1.1", "link-local"},
	{"100.64.0.1", "cgnat"},
	{"100.127.255.255", "cgnat"},
	{"100.128.0.1", ""},
	{"192.0.0.8", "reserved"},
	{"192.0.2.1", "documentation"},
	{"198.51.100.1", "documentation"},
	{"203.0.113.1", "documentation"},
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"198.20.0.1", ""},
	{"192.88.99.1", "reserved"},
	{"224.0.0.1", "multicast"},
	{"239.255.255.250", "multicast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "broadcast"},

	{"::", "unspecified"},
	{"::1", "loopback"},
	{"fe80::1", "link-local"},
	{"fe80::1%eth0", "link-local"},
	{"fec0::1", "site-local"},
	{"fc00::1", "unique-local"},
	{"fd12:3456::1", "unique-local"},
	{"fd00:ec2::254", "metadata"},
	{"ff02::1", "multicast"},
	{"2001:db8::1", "documentation"},
	{"3fff::1", "documentation"},
	{"2001:2::1", "benchmarking"},
	{"2001:10::1", "reserved"},
	{"100::1", "reserved"},
	{"5f00::1", "reserved"},
	{"::ffff:0:7f00:1", "reserved"},

	{"::ffff:127.0.0.1", "ipv4-mapped loopback"},
	{"::ffff:169.254.169.254", "ipv4-mapped metadata"},
	{"::ffff:10.1.2.3", "ipv4-mapped private"},
	{"::ffff:8.8.8.8", ""},
	{"::127.0.0.1", "ipv4-compatible loopback"},
	{"::8.8.8.8", "reserved"},
	{"64:ff9b::127.0.0.1", "nat64 loopback"},
	{"64:ff9b::a9fe:a9fe", "nat64 metadata"},
	{"64:ff9b::8.8.8.8", ""},
	{"64:ff9b:1::10.0.0.1", "nat64 private"},
	{"64:ff9b:1:7f00:0:100::", "nat64 loopback"}, // RFC 6052 /48 layout
	{"64:ff9b:1::8.8.8.8", ""},
	{"2002:7f00:1::", "6to4 loopback"},
	{"2002:a9fe:a9fe::1", "6to4 metadata"},
	{"2002:808:808::1", ""},
	{"2001:0:7f00:1::", "teredo loopback"},                      // server
	{"2001:0:4136:e378:8000:63bf:80ff:fffe", "teredo loopback"}, // client 127.0.0.1, obfuscated
	{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", ""},
}

func TestClassify(t *testing.T) {
	for _, c := range classifyCases {
		ip := netip.MustParseAddr(c.ip)
		if got := Classify(ip); got != c.want {
			t.Errorf("Classify(%s) = %q, want %q", c.ip, got, c.want)
		}
	}
	if got, want := Classify(netip.Addr{}), "invalid"; got != want {
		t.Errorf("Classify(zero Addr) = %q, want %q", got, want)
	}
}

func TestAdmit(t *testing.T) {
	g, err := New(Options{Module: "test/admit", Operator: &Operator{AllowPrivate: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("fd00::/8"),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ip   string
		want bool
	}{
		{"8.8.8.8", true},
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true}, // compared unmapped
		{"10.1.2.3", true},
		{"10.2.0.1", false},
		{"::1", false},
		{"169.254.169.254", false},
		{"fd12::1", true},
		{"fc00::1", false},
		{"64:ff9b::127.0.0.1", false}, // NAT64 is not unmapped: grant the IPv6 range to allow it
	}
	for _, c := range cases {
		_, _, got := g.admit(netip.MustParseAddr(c.ip))
		if got != c.want {
			t.Errorf("admit(%s) = %v, want %v", c.ip, got, c.want)
		}
	}
}
