package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
)

func TestLoadMissingIsDefault(t *testing.T) {
	got, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Load(empty home) = %+v, want %+v", got, want)
	}
	if got.ResolveMap() != nil || got.AllowPrivate() != nil {
		t.Errorf("defaults grant something: %v %v", got.ResolveMap(), got.AllowPrivate())
	}
	pool, err := got.RootCAs(t.TempDir())
	if pool != nil || err != nil {
		t.Errorf("RootCAs without extra_ca = %v, %v; want nil, nil", pool, err)
	}
}

func TestDefault(t *testing.T) {
	l := Default().Limits
	want := Limits{MaxMemory: 1 << 30, MaxTimeout: 5 * time.Minute, DefaultMemory: 128 << 20, DefaultTimeout: 30 * time.Second, DefaultConcurrency: 8}
	if l != want {
		t.Errorf("Default().Limits = %+v, want %+v", l, want)
	}
}

func TestEmptyFileIsDefault(t *testing.T) {
	for _, doc := range []string{"", "# nothing\n", "network:\nlimits:\n", "~\n"} {
		c, err := Parse(FileName, []byte(doc))
		if err != nil {
			t.Errorf("Parse(%q): %v", doc, err)
			continue
		}
		c.File = ""
		if want := Default(); !reflect.DeepEqual(c, want) {
			t.Errorf("Parse(%q) = %+v, want %+v", doc, c, want)
		}
	}
}

func TestLoadFull(t *testing.T) {
	home := t.TempDir()
	data, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, FileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Network: Network{
			Resolve: []Resolve{
				{Host: "api.stripe.com", Port: 443, To: netip.MustParseAddrPort("127.0.0.1:8443")},
				{Host: "api.groq.com", Port: 443, To: netip.MustParseAddrPort("[::1]:9443")},
				{Host: "intranet.example", Port: 8080, To: netip.MustParseAddrPort("10.0.0.7:0")},
				{Host: "2001:db8::1", Port: 443, To: netip.MustParseAddrPort("127.0.0.1:443")},
			},
			ExtraCA: "ca.pem",
			AllowPrivate: []netip.Prefix{
				netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
				netip.MustParsePrefix("10.1.2.3/32"), netip.MustParsePrefix("fd00::/8"),
			},
		},
		Limits: Limits{MaxMemory: 2 << 30, MaxTimeout: 10 * time.Minute, DefaultMemory: 256 << 20, DefaultTimeout: time.Minute, DefaultConcurrency: 16},
		LLM:    LLM{Provider: "groq", BaseURL: "https://llm.internal.example/openai/v1", Model: "llama-3.1-8b-instant", APIKeyEnv: "TEAM_GROQ_KEY", Timeout: 2 * time.Minute, MaxRetries: 4},
		Subprocess: Subprocess{SearchPath: []string{"/usr/bin", "/bin"}, GrantPrograms: []string{"python3"},
			AllowNetwork: true, AllowUnconfinedFiles: true},
		Install: Install{MaxModuleSize: 128 << 20, MaxFunctions: 400000, MaxFunctionSize: 16 << 20, MaxLocals: 60000,
			MaxModuleLocals: 9000000, MaxNesting: 20000, MaxTypes: 200000, MaxImports: 1000, MaxExports: 2000,
			MaxGlobals: 3000, MaxDataSegments: 4000, CompileTimeout: 5 * time.Minute, CompileMemory: 4 << 30},
		Advisories: Advisories{Block: "high"},
		File:       filepath.Join(home, FileName),
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load:\ngot  %+v\nwant %+v", c, want)
	}
	gotMap := c.ResolveMap()
	wantMap := map[string]netip.AddrPort{
		"api.stripe.com:443":    netip.MustParseAddrPort("127.0.0.1:8443"),
		"api.groq.com:443":      netip.MustParseAddrPort("[::1]:9443"),
		"intranet.example:8080": netip.MustParseAddrPort("10.0.0.7:0"),
		"[2001:db8::1]:443":     netip.MustParseAddrPort("127.0.0.1:443"),
	}
	if !reflect.DeepEqual(gotMap, wantMap) {
		t.Errorf("ResolveMap() = %v, want %v", gotMap, wantMap)
	}
	ap := c.AllowPrivate()
	ap[0] = netip.Prefix{}
	if c.Network.AllowPrivate[0] != netip.MustParsePrefix("127.0.0.0/8") {
		t.Error("AllowPrivate returned the config's own slice")
	}
}

// TestImplicitDefaultsFollowMaxima checks that lowering a maximum lowers
// the built-in default with it instead of failing.
func TestImplicitDefaultsFollowMaxima(t *testing.T) {
	c, err := Parse(FileName, []byte("limits:\n  max_memory: 64MiB\n  max_timeout: 10s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Limits.DefaultMemory, uint64(64<<20); got != want {
		t.Errorf("DefaultMemory = %d, want %d", got, want)
	}
	if got, want := c.Limits.DefaultTimeout, 10*time.Second; got != want {
		t.Errorf("DefaultTimeout = %v, want %v", got, want)
	}
}

func TestMemoryRoundsToPages(t *testing.T) {
	c, err := Parse(FileName, []byte("limits:\n  default_memory: 1048577\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Limits.DefaultMemory, uint64(1<<20+64<<10); got != want {
		t.Errorf("DefaultMemory = %d, want %d", got, want)
	}
}

// TestGoldenErrors parses every testdata/bad/*.yaml and compares the full
// error text with the .golden file next to it. After an intended change,
// rewrite the golden files with
//
//	go test ./internal/config -run Golden -update
//
// and review the diff (fixture.Golden).
func TestGoldenErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/bad/*.yaml: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(FileName, data)
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", file, c)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not a *Error", err)
			}
			fixture.Golden(t, strings.TrimSuffix(file, ".yaml")+".golden", []byte(err.Error()+"\n"))
		})
	}
}

func TestParsePrefix(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"127.0.0.0/8", "127.0.0.0/8", false},
		{"10.0.0.1", "10.0.0.1/32", false},
		{"::1", "::1/128", false},
		{"fd00::/8", "fd00::/8", false},
		{"0.0.0.0/0", "0.0.0.0/0", false},
		{"127.0.0.1/8", "", true},
		{"10.0.0.0/33", "", true},
		{"localhost", "", true},
		{"fe80::1%eth0", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		got, err := parsePrefix(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && got.String() != tt.want) {
			t.Errorf("parsePrefix(%q) = %v, %v; want %s, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseResolve(t *testing.T) {
	tests := []struct {
		in      string
		wantKey string
		wantTo  string
		wantErr bool
	}{
		{"api.stripe.com:443=127.0.0.1:8443", "api.stripe.com:443", "127.0.0.1:8443", false},
		{"Api.Stripe.Com.:443=127.0.0.1:8443", "api.stripe.com:443", "127.0.0.1:8443", false},
		{"api.stripe.com:443=127.0.0.1", "api.stripe.com:443", "127.0.0.1:0", false},
		{"api.stripe.com:443=[::1]:8443", "api.stripe.com:443", "[::1]:8443", false},
		{"api.stripe.com:443=::1", "api.stripe.com:443", "[::1]:0", false},
		{"[2001:db8::1]:443=127.0.0.1:1", "[2001:db8::1]:443", "127.0.0.1:1", false},
		{"192.0.2.1:80=127.0.0.1:8080", "192.0.2.1:80", "127.0.0.1:8080", false},
		{"api.stripe.com=127.0.0.1", "", "", true},
		{"api.stripe.com:443", "", "", true},
		{"api.stripe.com:0=127.0.0.1", "", "", true},
		{"*.stripe.com:443=127.0.0.1", "", "", true},
		{"https://api.stripe.com:443=127.0.0.1", "", "", true},
		{"api.stripe.com:443=localhost", "", "", true},
		{"api.stripe.com:443=127.0.0.1:99999", "", "", true},
		{"api.stripe.com:443=fe80::1%eth0", "", "", true},
		{"[::1]=127.0.0.1", "", "", true},
		{"=127.0.0.1", "", "", true},
	}
	for _, tt := range tests {
		r, err := parseResolve(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseResolve(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got := r.Key(); got != tt.wantKey {
			t.Errorf("parseResolve(%q).Key() = %q, want %q", tt.in, got, tt.wantKey)
		}
		if got := r.To.String(); got != tt.wantTo {
			t.Errorf("parseResolve(%q).To = %q, want %q", tt.in, got, tt.wantTo)
		}
	}
}

// writeCA writes a self-signed CA certificate as PEM and returns it.
func writeCA(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "station test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestRootCAs(t *testing.T) {
	home := t.TempDir()
	other := t.TempDir()
	relCA := writeCA(t, filepath.Join(home, "ca.pem"))
	absFile := filepath.Join(other, "abs.pem")
	absCA := writeCA(t, absFile)
	if err := os.WriteFile(filepath.Join(home, "junk.pem"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		extraCA string
		cert    *x509.Certificate
		wantErr string
	}{
		{"ca.pem", relCA, ""},
		{absFile, absCA, ""},
		{"missing.pem", nil, "network.extra_ca: open "},
		{"junk.pem", nil, "holds no PEM certificate"},
	}
	for _, tt := range tests {
		c := Default()
		c.Network.ExtraCA = tt.extraCA
		pool, err := c.RootCAs(home)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("RootCAs(%s) error = %v, want one containing %q", tt.extraCA, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("RootCAs(%s): %v", tt.extraCA, err)
		}
		if _, err := tt.cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
			t.Errorf("RootCAs(%s) does not trust the extra CA: %v", tt.extraCA, err)
		}
	}
}

func TestHome(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("STATION_HOME", dir)
	if got, err := Home(); err != nil || got != dir {
		t.Errorf("Home() with STATION_HOME = %q, %v; want %q", got, err, dir)
	}
	t.Chdir(dir)
	t.Setenv("STATION_HOME", "rel")
	if got, err := Home(); err != nil || got != filepath.Join(dir, "rel") {
		t.Errorf("Home() with relative STATION_HOME = %q, %v; want %q", got, err, filepath.Join(dir, "rel"))
	}
	t.Setenv("STATION_HOME", "")
	t.Setenv("HOME", dir)
	if got, err := Home(); err != nil || got != filepath.Join(dir, ".station") {
		t.Errorf("Home() = %q, %v; want %q", got, err, filepath.Join(dir, ".station"))
	}
}

func TestLoadErrors(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, FileName), []byte("limits: {max_memory: 1TiB}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(home)
	want := filepath.Join(home, FileName) + `:1:22: limits.max_memory: "1TiB" has an unknown unit "TiB" (use B, KiB, MiB or GiB)`
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %s", err, want)
	}
	if err := os.WriteFile(filepath.Join(home, FileName), make([]byte, maxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load(huge) = %v, want a size error", err)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, file := range append(files, bad...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(FileName, data)
		if err != nil {
			return
		}
		l := c.Limits
		if l.DefaultMemory > l.MaxMemory || l.DefaultTimeout > l.MaxTimeout || l.DefaultConcurrency < 1 {
			t.Fatalf("accepted inconsistent limits %+v", l)
		}
		for k, v := range c.ResolveMap() {
			if k != strings.ToLower(k) || !v.Addr().IsValid() {
				t.Fatalf("bad resolve entry %q=%v", k, v)
			}
		}
	})
}

// TestLongSyntaxErrorIsCutCleanly: a syntax error longer than the quoting
// bound ends in "...", not in a stray quote.
func TestLongSyntaxErrorIsCutCleanly(t *testing.T) {
	_, err := Parse("config.yaml", []byte("network:\n  resolve: [\""+strings.Repeat("x", 300)+"\n"))
	if err == nil {
		t.Fatal("a broken file parsed")
	}
	msg := err.Error()
	if !strings.Contains(msg, "invalid YAML: ") || strings.Contains(msg, `"..`) || strings.Contains(msg, `\"`) {
		t.Errorf("syntax error %q: want it unquoted, cut with ...", msg)
	}
}
