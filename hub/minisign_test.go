package hub

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
)

// The test vector of jedisct1/go-minisign (made by minisign itself): the
// legacy ("Ed") and the prehashed ("ED") signature of the 4-byte message
// "test" by one key.
const (
	vectorKey    = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"
	vectorLegacy = "untrusted comment: signature from minisign secret key\n" +
		"RWQf6LRCGA9i59SLOFxz6NxvASXDJeRtuZykwQepbDEGt87ig1BNpWaVWuNrm73YiIiJbq71Wi+dP9eKL8OC351vwIasSSbXxwA=\n" +
		"trusted comment: timestamp:1635442742\tfile:test\n" +
		"0YteLgV960ia80vnA/fHbvkyjl/IoP/HNOCaZfrF0CdhAlp7ok+Tpkya+VpWPX5C/Is3q8a/kEDSY7fBmmgJCg==\n"
	vectorPrehashed = "untrusted comment: signature from minisign secret key\n" +
		"RUQf6LRCGA9i559r3g7V1qNyJDApGip8MfqcadIgT9CuhV3EMhHoN1mGTkUidF/z7SrlQgXdy8ofjb7bNJJylDOocrCo8KLzZwo=\n" +
		"trusted comment: timestamp:1635443258\tfile:test\thashed\n" +
		"/cj37GK60vryibFn+ftOgbCvW9NKhKYgjVpFFQUcWPAnjO23wrvVDTt7cloNC06maoBli9q6qwZDXXoaxweICQ==\n"
)

func TestMinisignInterop(t *testing.T) {
	for _, in := range []string{vectorKey, "untrusted comment: minisign public key E7620F1842B4E81F\n" + vectorKey + "\n"} {
		k, err := ParsePublicKey(in)
		if err != nil {
			t.Fatalf("ParsePublicKey: %v", err)
		}
		if got, want := k.ID.String(), "E7620F1842B4E81F"; got != want {
			t.Errorf("key id = %s, want %s (as minisign prints it)", got, want)
		}
		if got := k.String(); got != vectorKey {
			t.Errorf("String() = %s, want %s", got, vectorKey)
		}
		sig, err := ParseSignature(vectorLegacy)
		if err != nil {
			t.Fatalf("ParseSignature: %v", err)
		}
		if err := k.Verify([]byte("test"), sig); err != nil {
			t.Errorf("Verify(minisign's own signature) = %v", err)
		}
		if got := sig.String(); got != vectorLegacy {
			t.Errorf("String() round trip:\n%s\nwant\n%s", got, vectorLegacy)
		}
		if err := k.Verify([]byte("tesT"), sig); err == nil {
			t.Error("Verify accepted another message")
		}
	}
	_, err := ParseSignature(vectorPrehashed)
	if err == nil || !strings.Contains(err.Error(), "minisign -S -l") {
		t.Errorf("prehashed signature: err = %v, want a refusal that says how to sign", err)
	}
}

func TestKeyIDRoundTrip(t *testing.T) {
	id, err := ParseKeyID("E7620F1842B4E81F")
	if err != nil {
		t.Fatal(err)
	}
	k, _ := ParsePublicKey(vectorKey)
	if id != k.ID {
		t.Errorf("ParseKeyID = %x, want %x", id, k.ID)
	}
	for _, bad := range []string{"", "E7620F1842B4E81", "E7620F1842B4E81FF", "G7620F1842B4E81F"} {
		if _, err := ParseKeyID(bad); err == nil {
			t.Errorf("ParseKeyID(%q) accepted", bad)
		}
	}
}

func newKey(t testing.TB) (PublicKey, ed25519.PrivateKey) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return PublicKey{ID: KeyIDOf(pub), Key: pub}, priv
}

func TestSignVerify(t *testing.T) {
	k, priv := newKey(t)
	other, _ := newKey(t)
	msg := []byte("station module bundle v1\n")
	sig, err := Sign(priv, k.ID, msg, "signed by station", "dave/x@1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseSignature(sig.String())
	if err != nil {
		t.Fatalf("ParseSignature(Sign()) = %v", err)
	}
	if err := k.Verify(msg, parsed); err != nil {
		t.Fatalf("Verify = %v", err)
	}
	pk, err := ParsePublicKey(k.File())
	if err != nil || pk.ID != k.ID || !pk.Key.Equal(k.Key) {
		t.Fatalf("ParsePublicKey(File()) = %v, %v", pk, err)
	}

	tests := []struct {
		name   string
		mutate func(*Signature, *PublicKey, *[]byte)
		want   string
	}{
		{"other message", func(s *Signature, k *PublicKey, m *[]byte) { *m = []byte("other") }, "does not match"},
		{"trusted comment", func(s *Signature, k *PublicKey, m *[]byte) { s.TrustedComment = "dave/x@9.9.9" }, "trusted comment was altered"},
		{"flipped bit", func(s *Signature, k *PublicKey, m *[]byte) { s.Sig[0] ^= 1 }, "does not match"},
		{"other key", func(s *Signature, k *PublicKey, m *[]byte) { *k = other }, "made with key"},
		{"other key, same id", func(s *Signature, k *PublicKey, m *[]byte) { k.Key = other.Key }, "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := ParseSignature(sig.String())
			kk, m := k, append([]byte(nil), msg...)
			tt.mutate(&s, &kk, &m)
			err := kk.Verify(m, s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Verify = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseSignatureErrors(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(vectorLegacy, "\n"), "\n")
	join := func(l ...string) string { return strings.Join(l, "\n") + "\n" }
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "want the 4 lines"},
		{"three lines", join(lines[:3]...), "want the 4 lines"},
		{"no comment prefix", join("comment: x", lines[1], lines[2], lines[3]), "line 1"},
		{"bad base64", join(lines[0], "!!!!", lines[2], lines[3]), "line 2"},
		{"short signature", join(lines[0], "RWQf6LRCGA9i5w==", lines[2], lines[3]), "line 2"},
		{"no trusted prefix", join(lines[0], lines[1], "timestamp:1", lines[3]), "line 3"},
		{"bad global", join(lines[0], lines[1], lines[2], "AAAA"), "line 4"},
		{"control in comment", join("untrusted comment: a\x1b[2Jb", lines[1], lines[2], lines[3]), "control character"},
		{"long comment", join("untrusted comment: "+strings.Repeat("a", 1025), lines[1], lines[2], lines[3]), "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSignature(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseSignature = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := ParseSignature(strings.ReplaceAll(vectorLegacy, "\n", "\r\n")); err != nil {
		t.Errorf("CRLF line ends: %v", err)
	}
}

func TestParsePublicKeyErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO",  // short
		"RUQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3", // "ED"
		"a\nb\nc",
		"not a comment\n" + vectorKey,
	} {
		if _, err := ParsePublicKey(in); err == nil {
			t.Errorf("ParsePublicKey(%q) accepted", in)
		}
	}
}

func FuzzParseSignature(f *testing.F) {
	f.Add(vectorLegacy)
	f.Add(vectorPrehashed)
	f.Add("untrusted comment: \nAAAA\ntrusted comment: \nAAAA\n")
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := ParseSignature(s)
		if err != nil {
			return
		}
		again, err := ParseSignature(sig.String())
		if err != nil {
			t.Fatalf("re-parse of %q: %v", sig.String(), err)
		}
		if again.String() != sig.String() {
			t.Fatalf("round trip changed the signature:\n%q\n%q", sig.String(), again.String())
		}
	})
}

func FuzzParsePublicKey(f *testing.F) {
	f.Add(vectorKey)
	f.Add("untrusted comment: x\n" + vectorKey)
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParsePublicKey(s)
		if err != nil {
			return
		}
		again, err := ParsePublicKey(k.File())
		if err != nil || again.String() != k.String() {
			t.Fatalf("round trip of %q: %v", s, err)
		}
	})
}
