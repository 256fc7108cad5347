package localca

import (
	"crypto/x509"
	"testing"
)

// TestLeafVerifies: a leaf verifies against the CA's pool for its names and
// addresses, and for no other name; another CA's pool refuses it.
func TestLeafVerifies(t *testing.T) {
	ca, err := New("test CA")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Leaf("test server", "api.example.test", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	verify := func(pool *x509.CertPool, name string) error {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name})
		return err
	}
	for _, name := range []string{"api.example.test", "127.0.0.1"} {
		if err := verify(ca.Pool(), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if verify(ca.Pool(), "evil.example") == nil {
		t.Error("the leaf verified for a name it was not issued for")
	}
	other, _ := New("other CA")
	if verify(other.Pool(), "api.example.test") == nil {
		t.Error("another CA's pool accepted the leaf")
	}
	if len(ca.PEM()) == 0 {
		t.Error("no PEM")
	}
}
