// Package config reads the operator's station configuration,
// $STATION_HOME/config.yaml: overrides and grants for module network egress
// (name resolution, an extra CA, private address ranges), the defaults
// and maxima of module limits, and the station's LLM provider (with
// environment overrides; the key only ever comes from the environment).
//
// Only the operator writes this file; no module can change it. Decoding is
// strict, like a manifest's: unknown keys, wrong types and duplicate keys are
// errors that name the file, line, column and field. A missing file means
// Default. The user reference is docs/config.md.
package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// FileName is the name of the configuration file in the station home.
const FileName = "config.yaml"

// Path is the configuration file of the station home home: what Load reads,
// and what a message that names a setting of the operator's points to.
func Path(home string) string { return filepath.Join(home, FileName) }

// maxFileSize bounds config.yaml and the extra CA file.
const maxFileSize = 1 << 20

// Config is the operator's station configuration.
type Config struct {
	// Network holds the operator's settings for module network egress. They
	// never apply to the station's own clients.
	Network Network
	// Limits are the defaults and maxima of module limits.
	Limits Limits
	// Subprocess holds the operator's subprocess settings.
	Subprocess Subprocess
	// Filesystem holds the operator's filesystem settings.
	Filesystem Filesystem
	// LLM holds the station's LLM provider settings (station-level I/O).
	LLM LLM
	// Install bounds what install accepts and what compiling may cost.
	Install Install
	// Advisories says what the station does with a module version a
	// security advisory affects.
	Advisories Advisories
	// MCP says what `station mcp` and the daemon's /mcp show MCP clients.
	MCP MCP
	// File is the path the configuration was read from, or "" when there
	// was no file and Config holds the defaults.
	File string
}

// MCP holds the settings of the MCP server (docs/mcp.md).
type MCP struct {
	// Expose lists the module ids ("owner/slug") whose commands MCP
	// clients see as tools; nil (the key left out) means every installed
	// module, an empty list none.
	Expose []string
}

// Network holds the operator's settings for module network egress.
type Network struct {
	// Resolve maps names to addresses, like curl --resolve, in file order.
	Resolve []Resolve
	// ExtraCA is the path of a PEM file whose certificates module egress
	// trusts in addition to the system roots, as written (relative paths
	// are relative to the station home); "" for none.
	ExtraCA string
	// AllowPrivate are the address ranges the network gate would refuse
	// (loopback, private, link-local, ...) that the operator grants to
	// every module.
	AllowPrivate []netip.Prefix
	// Grant are allowlist entries the operator allows in manifests although
	// they are broad: wildcards under a domain where a cloud, hosting or
	// tunnel service gives names to any customer ("*.amazonaws.com",
	// netgate.Rule.Broad). A manifest entry must be the same rule (scheme,
	// host and port).
	Grant []string
}

// Filesystem holds the operator's settings for module filesystem grants.
type Filesystem struct {
	// Grant are globs the operator allows in manifests although they are
	// broader than a manifest may ask for on its own (a system directory, a
	// whole home directory). A manifest must use the glob exactly as written.
	Grant []string
	// Quota bounds how many bytes each module's files may grow by; 0 means
	// the filesystem gate's default (256MiB).
	Quota uint64
	// Entries bounds how many files, directories and links each module may
	// have created (net of those it removed); 0 means the gate's default
	// (fsgate.DefaultEntries).
	Entries int
	// OpenFiles bounds the files all of a module's instances hold open at
	// once, and OpenFilesPerInstance those of one instance; 0 means the
	// gate's defaults (fsgate.DefaultOpenFiles, DefaultOpenFilesPerInstance).
	OpenFiles, OpenFilesPerInstance int
}

// Subprocess holds the operator's settings for modules that start programs.
type Subprocess struct {
	// SearchPath is the fixed PATH programs are resolved from at install
	// (default /usr/local/bin, /usr/bin, /bin).
	SearchPath []string
	// GrantAny accepts manifests with "subprocess: true": any program, run
	// outside the module's read limits (still without network, writing
	// only in the module's whole-tree write grants).
	GrantAny bool
	// GrantPrograms are interpreters and shells the operator allows modules
	// to start by name (they are refused otherwise).
	GrantPrograms []string
	// AllowNetwork lets children run with the host's network when the
	// platform cannot give them their own network namespace.
	AllowNetwork bool
	// AllowUnconfinedFiles lets children run although the platform cannot
	// confine them to the module's files (no Landlock, or Landlock that
	// cannot be applied): they can read and change any file the station's
	// user can. Without it no child starts there.
	AllowUnconfinedFiles bool
}

// Resolve is one resolve override: a module request to Host:Port connects to
// To instead of the addresses the name resolves to. The override does not
// grant its address: a loopback or private To still needs AllowPrivate.
type Resolve struct {
	// Host is the canonical host: lower case, no trailing dot, IPv6 without
	// brackets.
	Host string
	// Port is the request port it applies to, 1 to 65535.
	Port int
	// To is the address to connect to; a zero port keeps the request's port.
	To netip.AddrPort
}

// Key returns the "host:port" key of r (IPv6 hosts in brackets), as used by
// ResolveMap.
func (r Resolve) Key() string {
	if a, err := netip.ParseAddr(r.Host); err == nil && a.Is6() {
		return netip.AddrPortFrom(a, uint16(r.Port)).String()
	}
	return fmt.Sprintf("%s:%d", r.Host, r.Port)
}

// Limits are the operator's defaults and maxima for module limits. A module
// that asks for more than a maximum is refused at install and at load.
type Limits struct {
	// MaxMemory is the most linear memory a module may ask for, in bytes.
	MaxMemory uint64
	// MaxTimeout is the longest call deadline a module may ask for.
	MaxTimeout time.Duration
	// DefaultMemory applies to modules that do not set limits.memory.
	DefaultMemory uint64
	// DefaultTimeout applies to modules that do not set limits.timeout.
	DefaultTimeout time.Duration
	// DefaultConcurrency applies to modules that do not set
	// limits.concurrency.
	DefaultConcurrency int
}

// The defaults of Limits.
const (
	DefaultMaxMemory   = 1 << 30 // 1GiB
	DefaultMaxTimeout  = 5 * time.Minute
	DefaultMemory      = 128 << 20 // 128MiB
	DefaultTimeout     = 30 * time.Second
	DefaultConcurrency = 8
)

// Default returns the configuration used when config.yaml does not exist:
// no resolve overrides, no extra CA, no private ranges granted, the
// default limits, and critical advisories block.
func Default() *Config {
	return &Config{Limits: Limits{
		MaxMemory:          DefaultMaxMemory,
		MaxTimeout:         DefaultMaxTimeout,
		DefaultMemory:      DefaultMemory,
		DefaultTimeout:     DefaultTimeout,
		DefaultConcurrency: DefaultConcurrency,
	}, LLM: LLM{Timeout: DefaultLLMTimeout, MaxRetries: DefaultLLMMaxRetries},
		Advisories: Advisories{Block: DefaultAdvisoryBlock}}
}

// Load reads home/config.yaml. A missing file yields Default(); any other
// problem is an error, with one *Error per problem found joined by
// errors.Join.
func Load(home string) (*Config, error) {
	file := Path(home)
	data, err := readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return Parse(file, data)
}

// Parse decodes a configuration file's contents; filename is used in errors
// and recorded in Config.File. Fields the file does not set keep their
// defaults.
func Parse(filename string, data []byte) (*Config, error) {
	if len(data) > maxFileSize {
		return nil, &Error{File: filename, Msg: fmt.Sprintf("file is larger than %d bytes", maxFileSize)}
	}
	d := &decoder{file: filename}
	c := d.decode(data)
	if len(d.errs) > 0 {
		errs := make([]error, len(d.errs))
		for i, e := range d.errs {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	c.File = filename
	return c, nil
}

// readFile reads at most maxFileSize+1 bytes of file.
func readFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", file, maxFileSize)
	}
	return data, nil
}

// ResolveMap returns the resolve overrides keyed by "host:port" (lower case;
// IPv6 hosts in brackets), the form the network gate looks up. It returns
// nil when there are none.
func (c *Config) ResolveMap() map[string]netip.AddrPort {
	if len(c.Network.Resolve) == 0 {
		return nil
	}
	m := make(map[string]netip.AddrPort, len(c.Network.Resolve))
	for _, r := range c.Network.Resolve {
		m[r.Key()] = r.To
	}
	return m
}

// AllowPrivate returns a copy of the private address ranges the operator
// grants to module egress.
func (c *Config) AllowPrivate() []netip.Prefix {
	if len(c.Network.AllowPrivate) == 0 {
		return nil
	}
	return append([]netip.Prefix(nil), c.Network.AllowPrivate...)
}

// RootCAs returns the certificate pool module egress verifies servers with:
// the system roots plus the certificates in network.extra_ca (resolved
// against home when relative). It returns nil, nil when there is no extra CA,
// which means "the system roots". If the system roots cannot be loaded, the
// pool holds only the extra CA.
func (c *Config) RootCAs(home string) (*x509.CertPool, error) {
	if c.Network.ExtraCA == "" {
		return nil, nil
	}
	file := c.Network.ExtraCA
	if !filepath.IsAbs(file) {
		file = filepath.Join(home, file)
	}
	data, err := readFile(file)
	if err != nil {
		return nil, fmt.Errorf("network.extra_ca: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("network.extra_ca: %s holds no PEM certificate", file)
	}
	return pool, nil
}

// Home returns the station home directory: $STATION_HOME if it is set (made
// absolute), otherwise ~/.station.
func Home() (string, error) {
	if h := os.Getenv("STATION_HOME"); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", fmt.Errorf("station home: %w", err)
		}
		return abs, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("station home: set STATION_HOME: %w", err)
	}
	return filepath.Join(home, ".station"), nil
}
