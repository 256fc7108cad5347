package hubserver

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/manifest"
)

// A hub export is one tar stream (gzip-compressed or not) that holds
// everything a hub keeps, so that a hub moves from one machine's SQLite and
// blob directory to PostgreSQL and an OCI registry (or back) with nothing
// lost:
//
//	hub-export.json            the ExportManifest: format, source, and for
//	                           each table its rows, bytes and SHA-256, and
//	                           every blob with its size
//	tables/<name>.jsonl        each table of archiveTables, in that order
//	                           (the order foreign keys need), one JSON
//	                           object per row in the table's key order
//	blobs/sha256/<hex>         every blob the versions name, by digest
//
// A row's JSON is canonical (encodeRow): its columns in archiveTables'
// order, text as JSON strings, integers (times are Unix nanoseconds, as
// both stores keep them) as JSON numbers, booleans, bytes in standard
// base64, NULL as null. So the SHA-256 of a table's entry is the SHA-256
// of its canonical rows, and recomputing it from a store's snapshot checks
// that the store holds exactly what the archive did, whatever the store.
//
// Import trusts nothing in an archive: entries come in this order with
// exactly these names (no path from the archive is ever used as one), each
// no larger than its bound and the manifest says; every row must be in
// canonical form, with the table's columns and no other, in strictly
// increasing key order; every blob must have its name's digest and be one
// the versions name; the tables are loaded only once every entry checked,
// in one transaction.

// ExportFormat is the version of the archive layout this build writes, and
// the newest it imports. A change of tables or columns increments it.
const ExportFormat = 1

const (
	exportManifestName = "hub-export.json"
	exportTablePrefix  = "tables/"
	exportBlobPrefix   = "blobs/sha256/"

	// maxExportManifest bounds hub-export.json (its blob list is about 90
	// bytes a blob: a million blobs fit).
	maxExportManifest = 128 << 20
	// maxExportRow bounds one row's line. The largest rows are a team's
	// lockfile (8 MiB by default, in base64) and an advisory.
	maxExportRow = 64 << 20
	// maxExportBlob bounds one blob: a module's wasm (32 MiB by default,
	// at most hubclient.MaxWasmSize for a station to install it) or a
	// manifest (manifest.MaxFileSize).
	maxExportBlob = 1 << 30
)

// ExportManifest is hub-export.json, the first entry of an export.
type ExportManifest struct {
	// Format is ExportFormat of the build that wrote it.
	Format int `json:"format"`
	// Source is the store exported, for the record: a store's schema
	// newer than this build knows is refused.
	Source  ExportSource  `json:"source"`
	Created time.Time     `json:"created"`
	Tables  []ExportTable `json:"tables"`
	// Blobs are every blob the versions name, ordered by digest.
	Blobs []ExportBlob `json:"blobs"`
}

// ExportSource names the store an export was read from.
type ExportSource struct {
	Store  string `json:"store"` // "sqlite" or "postgres"
	Schema int    `json:"schema"`
}

// ExportTable is one table of an export: its rows, the size of its entry,
// and the SHA-256 (hex) of its canonical rows, which is that of its entry.
type ExportTable struct {
	Name   string `json:"name"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// ExportBlob is one blob of an export.
type ExportBlob struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// The tables an export holds, by kind of column.
type colKind uint8

const (
	kText colKind = iota
	kInt
	kBool
	kBytes
)

type archCol struct {
	name string
	kind colKind
	null bool
}

// archTable is a table of an export: its columns, in the order of the
// canonical row, and its key, the columns rows are ordered (and unique)
// by. Both stores hold it under the same name with the same columns, but
// for what each store says in its dump file (sqlite_dump.go,
// postgres_dump.go): a column SQLite keeps as the rowid, a counter SQLite
// derives.
type archTable struct {
	name string
	cols []archCol
	key  []int // indexes into cols
}

// table returns an archTable of columns "name" (text), "name int",
// "name int null", "name bool" or "name bytes", keyed by the columns key
// names.
func table(name string, key []string, cols ...string) archTable {
	t := archTable{name: name}
	for _, spec := range cols {
		f := strings.Fields(spec)
		c := archCol{name: f[0]}
		if len(f) > 1 {
			c.kind = map[string]colKind{"int": kInt, "bool": kBool, "bytes": kBytes}[f[1]]
		}
		c.null = len(f) > 2 && f[2] == "null"
		t.cols = append(t.cols, c)
	}
	for _, k := range key {
		t.key = append(t.key, t.col(k))
	}
	return t
}

// col returns the index of the column name (-1 if none).
func (t *archTable) col(name string) int {
	return slices.IndexFunc(t.cols, func(c archCol) bool { return c.name == name })
}

func (t *archTable) colNames() []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.name
	}
	return out
}

// archiveTables are every table of the hub's schemas, in an order that
// satisfies their foreign keys, but those each store lists as not carried
// (sqliteNotCarried, pgNotCarried). event_seq (the event log's last
// sequence number) and advisory_counters (each year's last advisory
// number) are the counters a store numbers from: carried, stations'
// cursors and advisory ids stay valid after a move.
var archiveTables = []archTable{
	table("accounts", []string{"name"}, "name", "created_at int", "admin bool"),
	table("tokens", []string{"id"}, "id", "account", "hash bytes", "label", "created_at int"),
	table("keys", []string{"account", "id"}, "account", "id", "public_key", "created_at int", "revoked_at int null"),
	table("modules", []string{"id"}, "id", "owner", "description", "latest", "created_at int", "updated_at int"),
	table("versions", []string{"module", "version"}, "module", "version", "manifest_digest", "wasm_digest", "wasm_size int",
		"key_id", "signature", "published_at int", "yanked_at int null", "yank_reason"),
	table("teams", []string{"name"}, "name", "created_at int", "revision int", "lockfile bytes", "updated_at int", "updated_by"),
	table("members", []string{"team", "account"}, "team", "account", "role", "joined_at int"),
	table("invites", []string{"hash"}, "hash bytes", "id", "team", "role", "account", "created_by", "created_at int", "expires_at int"),
	table("events", []string{"seq"}, "seq int", "time int", "kind", "team", "account", "data bytes"),
	table("event_seq", nil, "last int"),
	table("reports", []string{"id"}, "id", "target", "owner", "introduced", "last_affected", "title", "body", "cwe",
		"severity_level", "severity_cvss", "reproduction", "state", "reporter", "fixed_in", "duplicate_of", "advisory",
		"published_at int null", "created_at int", "updated_at int"),
	table("report_events", []string{"report", "seq"}, "report", "seq int", "kind", "actor", "time int", "data bytes"),
	table("credits", []string{"n"}, "n int", "report", "account", "amount int", "reason", "awarded_by", "time int"),
	table("station_releases", []string{"version"}, "version", "recorded_by", "recorded_at int"),
	table("advisory_counters", []string{"year"}, "year int", "last int"),
	table("advisories", []string{"n"}, "n int", "id", "target", "data bytes", "modified int", "withdrawn int null", "report"),
}

// archTableNamed returns the archive table name, or nil.
func archTableNamed(name string) *archTable {
	for i := range archiveTables {
		if archiveTables[i].name == name {
			return &archiveTables[i]
		}
	}
	return nil
}

// archiveStore is a Store that can be exported and imported: *SQLite and
// *Postgres.
type archiveStore interface {
	// archiveSnapshot opens one consistent, read-only snapshot of the
	// store. Its rows see nothing committed after it began.
	archiveSnapshot(ctx context.Context) (archiveSnapshot, error)
	// archiveLoad runs fn in one write transaction, committed if fn
	// returns nil.
	archiveLoad(ctx context.Context, fn func(archiveLoader) error) error
}

// archiveSnapshot reads a store's tables.
type archiveSnapshot interface {
	source() ExportSource
	// rows calls fn with each row of t, in t's key order, as canonical
	// Go values (string, int64, bool, []byte, or nil), valid until fn
	// returns.
	rows(ctx context.Context, t *archTable, fn func(row []any) error) error
	close()
}

// archiveLoader writes tables in a load transaction.
type archiveLoader interface {
	// rowsIn returns how many rows each table of archiveTables holds
	// (event_seq: its last number), for the check that the target is
	// empty.
	rowsIn(ctx context.Context) (map[string]int64, error)
	// insert adds the rows next returns (io.EOF after the last) to t.
	insert(ctx context.Context, t *archTable, next func() ([]any, error)) error
	// finish runs after every table is loaded: whatever the store must
	// bring in line with what was inserted (its sequences), or check.
	finish(ctx context.Context) error
}

// ExportOptions adjust Export.
type ExportOptions struct {
	// Gzip compresses the archive.
	Gzip bool
	// Progress, when set, receives a line for each table and blob as
	// it is written.
	Progress io.Writer
	// Now is the clock of the manifest's Created (default time.Now).
	Now func() time.Time
}

// Export writes an export of the hub st and blobs to w: the tables read in
// one snapshot (a running hub may go on serving: what it commits after the
// snapshot began is not in the export), then the blobs its versions name.
// It returns the manifest written.
func Export(ctx context.Context, st Store, blobs Blobs, w io.Writer, o ExportOptions) (*ExportManifest, error) {
	as, ok := st.(archiveStore)
	if !ok {
		return nil, fmt.Errorf("export: a %T cannot be exported", st)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	snap, err := as.archiveSnapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer snap.close()
	m := &ExportManifest{Format: ExportFormat, Source: snap.source(), Created: now().UTC().Truncate(time.Second), Blobs: []ExportBlob{}}

	// Pass 1: each table's rows, size and hash (a tar entry's header has
	// its size), and the blobs the versions name.
	refs := blobRefs{}
	for i := range archiveTables {
		t := &archiveTables[i]
		var onRow func([]any) error
		if t.name == "versions" {
			onRow = refs.addVersion
		}
		sum, err := tableSum(ctx, snap, t, nil, onRow)
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		m.Tables = append(m.Tables, sum)
	}
	for _, d := range refs.digests() {
		size, ok := refs.wasm[d]
		if !ok {
			// A manifest: small, and its size is known only from its
			// bytes (Get checks their digest).
			data, err := blobs.Get(ctx, d, manifest.MaxFileSize)
			if err != nil {
				return nil, fmt.Errorf("export: the manifest blob %s: %w", d, err)
			}
			size = int64(len(data))
		}
		m.Blobs = append(m.Blobs, ExportBlob{Digest: d, Size: size})
	}

	out := w
	var gz *gzip.Writer
	if o.Gzip {
		gz = gzip.NewWriter(w)
		out = gz
	}
	tw := tar.NewWriter(out)
	head, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	head = append(head, '\n')
	if err := writeEntry(tw, exportManifestName, int64(len(head)), m.Created, bytes.NewReader(head)); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	// Pass 2, in the same snapshot: the same rows again, into the tar.
	for i := range archiveTables {
		t, want := &archiveTables[i], m.Tables[i]
		if err := tw.WriteHeader(entryHeader(exportTablePrefix+t.name+".jsonl", want.Bytes, m.Created)); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		got, err := tableSum(ctx, snap, t, tw, nil)
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		if got != want {
			return nil, fmt.Errorf("export: table %s read differently twice in one snapshot (%d rows, then %d): nothing can be trusted; is the database file shared with another program?", t.name, want.Rows, got.Rows)
		}
		progress(o.Progress, "table %-17s %9d rows  %s\n", t.name, got.Rows, sizeText(got.Bytes))
	}
	snap.close() // the blobs need no snapshot: content-addressed, never changed
	for i, b := range m.Blobs {
		if err := exportBlob(ctx, tw, blobs, b, m.Created); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		progress(o.Progress, "blob %d/%d %s  %s\n", i+1, len(m.Blobs), b.Digest, sizeText(b.Size))
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
	}
	return m, nil
}

// tableSum reads t from snap: its rows, the size and SHA-256 of their
// canonical lines, which it also writes to w (when not nil), and calls
// onRow (when not nil) with each row.
func tableSum(ctx context.Context, snap archiveSnapshot, t *archTable, w io.Writer, onRow func([]any) error) (ExportTable, error) {
	sum := ExportTable{Name: t.name}
	h := sha256.New()
	var line []byte
	err := snap.rows(ctx, t, func(row []any) error {
		var err error
		if line, err = encodeRow(line[:0], t, row); err != nil {
			return fmt.Errorf("table %s, row %d: %w", t.name, sum.Rows+1, err)
		}
		if len(line) > maxExportRow {
			return fmt.Errorf("table %s, row %d: %d bytes, more than an export holds (%d)", t.name, sum.Rows+1, len(line), maxExportRow)
		}
		if onRow != nil {
			if err := onRow(row); err != nil {
				return fmt.Errorf("table %s, row %d: %w", t.name, sum.Rows+1, err)
			}
		}
		h.Write(line)
		if w != nil {
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		sum.Rows++
		sum.Bytes += int64(len(line))
		return nil
	})
	if err != nil {
		return ExportTable{}, fmt.Errorf("read table %s: %w", t.name, err)
	}
	sum.SHA256 = hex.EncodeToString(h.Sum(nil))
	return sum, nil
}

// exportBlob copies blob b into the archive, checking its size and digest
// as it goes: a corrupt blob directory fails the export instead of making
// an archive the import would refuse.
func exportBlob(ctx context.Context, tw *tar.Writer, blobs Blobs, b ExportBlob, at time.Time) error {
	rc, err := blobs.Open(ctx, b.Digest)
	if err != nil {
		return fmt.Errorf("blob %s: %w", b.Digest, err)
	}
	defer rc.Close()
	if err := tw.WriteHeader(entryHeader(exportBlobPrefix+strings.TrimPrefix(b.Digest, "sha256:"), b.Size, at)); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tw, h), io.LimitReader(rc, b.Size+1))
	switch {
	case errors.Is(err, tar.ErrWriteTooLong) || err == nil && n > b.Size:
		return fmt.Errorf("blob %s is larger than the %d bytes its version says: the blob store is corrupt", b.Digest, b.Size)
	case err != nil:
		return fmt.Errorf("blob %s: %w", b.Digest, err)
	case n < b.Size:
		return fmt.Errorf("blob %s is %d bytes, not the %d its version says: the blob store is corrupt", b.Digest, n, b.Size)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != b.Digest {
		return fmt.Errorf("blob %s has digest %s: the blob store is corrupt", b.Digest, got)
	}
	return nil
}

func entryHeader(name string, size int64, at time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600, ModTime: at}
}

func writeEntry(tw *tar.Writer, name string, size int64, at time.Time, r io.Reader) error {
	if err := tw.WriteHeader(entryHeader(name, size, at)); err != nil {
		return err
	}
	_, err := io.Copy(tw, r)
	return err
}

// blobRefs are the blobs the versions name: the manifests, and the wasm
// binaries with their sizes.
type blobRefs struct {
	manifests map[string]bool
	wasm      map[string]int64
}

func (r *blobRefs) addVersion(row []any) error {
	t := archTableNamed("versions")
	man, wasm, size := row[t.col("manifest_digest")].(string), row[t.col("wasm_digest")].(string), row[t.col("wasm_size")].(int64)
	if !hub.ValidDigest(man) || !hub.ValidDigest(wasm) {
		return fmt.Errorf("version %s@%s names a blob that is not a sha256 digest", row[0], row[1])
	}
	if size < 0 || size > maxExportBlob {
		return fmt.Errorf("version %s@%s has a wasm of %d bytes (at most %d are carried)", row[0], row[1], size, maxExportBlob)
	}
	if r.wasm == nil {
		r.manifests, r.wasm = map[string]bool{}, map[string]int64{}
	}
	if have, ok := r.wasm[wasm]; ok && have != size {
		return fmt.Errorf("versions give the wasm %s two sizes (%d and %d)", wasm, have, size)
	}
	r.manifests[man] = true
	r.wasm[wasm] = size
	return nil
}

// digests returns every blob named, sorted.
func (r *blobRefs) digests() []string {
	var out []string
	for d := range r.manifests {
		out = append(out, d)
	}
	for d := range r.wasm {
		if !r.manifests[d] {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// encodeRow appends row's canonical line (with its newline) to buf.
func encodeRow(buf []byte, t *archTable, row []any) ([]byte, error) {
	if len(row) != len(t.cols) {
		return buf, fmt.Errorf("%d values for %d columns", len(row), len(t.cols))
	}
	buf = append(buf, '{')
	for i, c := range t.cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, c.name...)
		buf = append(buf, '"', ':')
		v := row[i]
		if v == nil {
			if !c.null {
				return buf, fmt.Errorf("column %s is NULL", c.name)
			}
			buf = append(buf, "null"...)
			continue
		}
		ok := false
		switch c.kind {
		case kText:
			var s string
			if s, ok = v.(string); ok {
				if !utf8.ValidString(s) {
					return buf, fmt.Errorf("column %s is not UTF-8 text (PostgreSQL could not hold it)", c.name)
				}
				buf = appendJSONString(buf, s)
			}
		case kInt:
			var n int64
			if n, ok = v.(int64); ok {
				buf = strconv.AppendInt(buf, n, 10)
			}
		case kBool:
			var b bool
			if b, ok = v.(bool); ok {
				buf = strconv.AppendBool(buf, b)
			}
		case kBytes:
			var b []byte
			if b, ok = v.([]byte); ok {
				buf = append(buf, '"')
				buf = base64.StdEncoding.AppendEncode(buf, b)
				buf = append(buf, '"')
			}
		}
		if !ok {
			return buf, fmt.Errorf("column %s holds a %T", c.name, v)
		}
	}
	return append(buf, '}', '\n'), nil
}

// appendJSONString appends s as a JSON string, escaping only what JSON
// requires (", \ and control characters), so that the encoding is one.
func appendJSONString(buf []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"')
}

// decodeRow parses one line of t (without its newline) and returns its
// values. The line must be canonical: what encodeRow makes of the values,
// byte for byte (so no column is unknown, missing, repeated or reordered,
// and the hash of the lines is the hash of the rows).
func decodeRow(t *archTable, line []byte) ([]any, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	for name := range obj {
		if t.col(name) < 0 {
			return nil, fmt.Errorf("unknown column %s", clipText(name))
		}
	}
	row := make([]any, len(t.cols))
	for i, c := range t.cols {
		raw, ok := obj[c.name]
		if !ok {
			return nil, fmt.Errorf("no column %s", c.name)
		}
		if string(raw) == "null" {
			if !c.null {
				return nil, fmt.Errorf("column %s is null", c.name)
			}
			continue
		}
		var err error
		switch c.kind {
		case kText:
			var s string
			err = json.Unmarshal(raw, &s)
			row[i] = s
		case kInt:
			var n int64
			err = json.Unmarshal(raw, &n)
			row[i] = n
		case kBool:
			var b bool
			err = json.Unmarshal(raw, &b)
			row[i] = b
		case kBytes:
			var b []byte // encoding/json decodes standard base64
			err = json.Unmarshal(raw, &b)
			if b == nil {
				b = []byte{}
			}
			row[i] = b
		}
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.name, err)
		}
	}
	again, err := encodeRow(nil, t, row)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again[:len(again)-1], line) {
		return nil, errors.New("the row is not in canonical form (as export writes it)")
	}
	return row, nil
}

// compareKeys orders rows a and b of t by t's key, as both stores do
// (text and bytes by their bytes).
func compareKeys(t *archTable, a, b []any) int {
	for _, k := range t.key {
		var c int
		switch x := a[k].(type) {
		case string:
			c = strings.Compare(x, b[k].(string))
		case int64:
			c = cmp.Compare(x, b[k].(int64))
		case []byte:
			c = bytes.Compare(x, b[k].([]byte))
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func clipText(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// sizeText is n bytes for a person: "512 B", "3.2 MiB".
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ImportOptions adjust Import.
type ImportOptions struct {
	// Progress, when set, receives a line for each table and blob.
	Progress io.Writer
	// TempDir holds the tables while the blobs are copied (default
	// os.TempDir()): the tables are loaded only once the whole archive
	// checked.
	TempDir string
}

// ImportResult is what Import loaded and what it found in the target
// after the commit.
type ImportResult struct {
	Manifest  *ExportManifest `json:"-"`
	Source    ExportSource    `json:"source"`
	Created   time.Time       `json:"created"`
	Tables    []TableCheck    `json:"tables"`
	Blobs     BlobCheck       `json:"blobs"`
	Artifacts int             `json:"artifacts"` // versions stored and tagged as artifacts (an ArtifactStore target)
	OK        bool            `json:"ok"`
}

// TableCheck compares a table of the archive with the target's, read back
// after the commit.
type TableCheck struct {
	Name         string `json:"name"`
	SourceRows   int64  `json:"source_rows"`
	TargetRows   int64  `json:"target_rows"`
	SourceSHA256 string `json:"source_sha256"`
	TargetSHA256 string `json:"target_sha256"`
	Match        bool   `json:"match"`
}

// BlobCheck is what the target's blob store holds of the archive's blobs,
// each opened and hashed.
type BlobCheck struct {
	Listed int `json:"listed"`
	Match  int `json:"match"`
	// Bad are the blobs missing or wrong in the target, with why.
	Bad []string `json:"bad"`
}

// VerifyError is returned by Import when the target, read back after the
// commit, does not hold what the archive did.
type VerifyError struct{ Tables, Blobs int }

func (e *VerifyError) Error() string {
	return fmt.Sprintf("import committed, but the target does not match the archive: %d tables and %d blobs differ (the comparison says which); do not serve from it: find out why, then import again into a new, empty database", e.Tables, e.Blobs)
}

// NotEmptyError is returned by Import for a target that holds data.
type NotEmptyError struct{ Rows map[string]int64 }

func (e *NotEmptyError) Error() string {
	var parts []string
	for _, t := range archiveTables {
		if n := e.Rows[t.name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", t.name, n))
		}
	}
	return fmt.Sprintf("the target hub is not empty (%s): import only into a new database — for PostgreSQL `createdb` a new one (or drop and create it again, if what it holds is to go), for SQLite a new data directory — and a blob store whose old contents do not matter", strings.Join(parts, ", "))
}

// Import loads the export r into st and blobs, which must hold no hub
// yet (*NotEmptyError otherwise). It reads the whole archive first —
// checking every entry, keeping the tables in a temporary directory and
// copying the blobs into blobs (each verified by its digest) — then
// pushes each version's artifact if blobs keeps them (PutArtifact, an OCI
// registry), then loads every table in one transaction. Nothing is
// committed from an archive that is refused, truncated or corrupt. After
// the commit it reads the target back: every table's rows and hash, and
// every blob opened and hashed; a difference is a *VerifyError, returned
// with the result that says which. An ArtifactStore target gets each
// version's artifact as a publish would: stored before the commit, tagged
// after it.
func Import(ctx context.Context, r io.Reader, st Store, blobs Blobs, o ImportOptions) (*ImportResult, error) {
	as, ok := st.(archiveStore)
	if !ok {
		return nil, fmt.Errorf("import: a %T cannot be imported into", st)
	}
	// Refused before anything is copied; checked again in the load
	// transaction.
	if err := as.archiveLoad(ctx, requireEmpty(ctx)); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	tmp, err := os.MkdirTemp(o.TempDir, "station-hub-import-")
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer os.RemoveAll(tmp)
	ar, err := readArchive(ctx, r, blobs, tmp, o.Progress)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	res := &ImportResult{Manifest: ar.m, Source: ar.m.Source, Created: ar.m.Created}
	// As a publish does (modules.go): each version's artifact stored
	// untagged before the Store records it, tagged once it has.
	if _, err := eachArtifact(blobs, ar, func(as ArtifactStore, v Version) error {
		if err := as.PutArtifact(ctx, v); err != nil {
			return fmt.Errorf("push the artifact of %s@%s: %w", v.Module, v.Version.Version, err)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("import: nothing was committed: %w", err)
	}
	err = as.archiveLoad(ctx, func(l archiveLoader) error {
		if err := requireEmpty(ctx)(l); err != nil {
			return err
		}
		for i := range archiveTables {
			t := &archiveTables[i]
			if err := ar.loadTable(ctx, l, t); err != nil {
				return fmt.Errorf("load table %s: %w", t.name, err)
			}
			progress(o.Progress, "loaded %-16s %9d rows\n", t.name, ar.m.Tables[i].Rows)
		}
		return l.finish(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("import: nothing was committed: %w", err)
	}
	res.Artifacts, err = eachArtifact(blobs, ar, func(as ArtifactStore, v Version) error {
		if err := as.TagArtifact(ctx, v); err != nil {
			return fmt.Errorf("tag the artifact of %s@%s: %w", v.Module, v.Version.Version, err)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("import committed the tables, but %w: the hub serves without tags, but a registry that deletes untagged manifests may delete their blobs with them; fix the registry, then import again into a new database and repository", err)
	}
	progress(o.Progress, "committed; reading the target back\n")
	if err := verifyImport(ctx, as, blobs, ar.m, res); err != nil {
		return res, fmt.Errorf("import committed, but the target could not be read back: %w", err)
	}
	if !res.OK {
		bad := 0
		for _, t := range res.Tables {
			if !t.Match {
				bad++
			}
		}
		return res, &VerifyError{Tables: bad, Blobs: len(res.Blobs.Bad)}
	}
	return res, nil
}

// requireEmpty refuses a target that holds any row.
func requireEmpty(ctx context.Context) func(archiveLoader) error {
	return func(l archiveLoader) error {
		rows, err := l.rowsIn(ctx)
		if err != nil {
			return err
		}
		for _, n := range rows {
			if n > 0 {
				return &NotEmptyError{Rows: rows}
			}
		}
		return nil
	}
}

// verifyImport fills res with the target's tables and blobs compared to
// m's.
func verifyImport(ctx context.Context, as archiveStore, blobs Blobs, m *ExportManifest, res *ImportResult) error {
	snap, err := as.archiveSnapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.close()
	res.OK = true
	for i := range archiveTables {
		got, err := tableSum(ctx, snap, &archiveTables[i], nil, nil)
		if err != nil {
			return err
		}
		want := m.Tables[i]
		c := TableCheck{Name: want.Name, SourceRows: want.Rows, TargetRows: got.Rows, SourceSHA256: want.SHA256, TargetSHA256: got.SHA256}
		c.Match = c.SourceRows == c.TargetRows && c.SourceSHA256 == c.TargetSHA256
		res.OK = res.OK && c.Match
		res.Tables = append(res.Tables, c)
	}
	snap.close()
	res.Blobs = BlobCheck{Listed: len(m.Blobs), Bad: []string{}}
	for _, b := range m.Blobs {
		if why := checkBlob(ctx, blobs, b); why != "" {
			res.Blobs.Bad = append(res.Blobs.Bad, b.Digest+": "+why)
			continue
		}
		res.Blobs.Match++
	}
	res.OK = res.OK && len(res.Blobs.Bad) == 0
	return nil
}

// checkBlob opens b in blobs and hashes it: "" when it is there, whole.
func checkBlob(ctx context.Context, blobs Blobs, b ExportBlob) string {
	rc, err := blobs.Open(ctx, b.Digest)
	if err != nil {
		return err.Error()
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(rc, b.Size+1))
	switch {
	case err != nil:
		return err.Error()
	case n != b.Size:
		return fmt.Sprintf("%d bytes, not %d", n, b.Size)
	case "sha256:"+hex.EncodeToString(h.Sum(nil)) != b.Digest:
		return "its bytes have another digest"
	}
	return ""
}

// archive is an export read and checked by readArchive: its manifest, and
// its tables in files of dir.
type archive struct {
	m   *ExportManifest
	dir string
}

func (a *archive) tableFile(t *archTable) string { return filepath.Join(a.dir, t.name+".jsonl") }

// readArchive reads the export r: its manifest, its tables into files in
// dir (each row checked), its blobs into blobs (each checked against its
// digest and the versions), and its end.
func readArchive(ctx context.Context, r io.Reader, blobs Blobs, dir string, prog io.Writer) (*archive, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var in io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("the archive is not a valid gzip stream: %w", err)
		}
		gz.Multistream(false)
		in = gz
	}
	tr := tar.NewReader(in)
	data := truncReader{tr}
	next := func(name string, max int64) (*tar.Header, error) {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("the archive ends before %s: it is truncated", name)
		}
		if err != nil {
			return nil, fmt.Errorf("the archive is corrupt or truncated before %s: %w", name, err)
		}
		if hdr.Name != name {
			return nil, fmt.Errorf("the archive has %s where %s belongs: it was not made by station hub export, or was changed", clipText(hdr.Name), name)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s is not a regular file in the archive", name)
		}
		if hdr.Size < 0 || hdr.Size > max {
			return nil, fmt.Errorf("%s is %d bytes, more than %d", name, hdr.Size, max)
		}
		return hdr, nil
	}

	hdr, err := next(exportManifestName, maxExportManifest)
	if err != nil {
		return nil, err
	}
	m, err := decodeManifest(io.LimitReader(data, hdr.Size))
	if err != nil {
		return nil, err
	}
	a := &archive{m: m, dir: dir}
	refs := blobRefs{}
	var maxSeq int64
	for i := range archiveTables {
		t, want := &archiveTables[i], m.Tables[i]
		name := exportTablePrefix + t.name + ".jsonl"
		hdr, err := next(name, want.Bytes)
		if err != nil {
			return nil, err
		}
		if hdr.Size != want.Bytes {
			return nil, fmt.Errorf("%s is %d bytes, but the manifest says %d: the archive is corrupt", name, hdr.Size, want.Bytes)
		}
		var onRow func([]any) error
		switch t.name {
		case "versions":
			onRow = refs.addVersion
		case "events":
			onRow = func(row []any) error { maxSeq = row[0].(int64); return nil }
		case "event_seq":
			onRow = func(row []any) error {
				if maxSeq > row[0].(int64) {
					return fmt.Errorf("the last event is %d, beyond the counter's %d", maxSeq, row[0].(int64))
				}
				return nil
			}
		}
		if err := spoolTable(data, t, want, a.tableFile(t), onRow); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		progress(prog, "checked table %-17s %9d rows  %s\n", t.name, want.Rows, sizeText(want.Bytes))
	}
	if m.Tables[slices.IndexFunc(archiveTables, func(t archTable) bool { return t.name == "event_seq" })].Rows != 1 {
		return nil, errors.New("tables/event_seq.jsonl: the archive must have one row of event_seq, the event log's counter")
	}
	if err := checkBlobList(m, &refs); err != nil {
		return nil, err
	}
	var copied int64
	for i, b := range m.Blobs {
		name := exportBlobPrefix + strings.TrimPrefix(b.Digest, "sha256:")
		hdr, err := next(name, b.Size)
		if err != nil {
			return nil, err
		}
		if hdr.Size != b.Size {
			return nil, fmt.Errorf("%s is %d bytes, but the manifest says %d: the archive is corrupt", name, hdr.Size, b.Size)
		}
		if err := importBlob(ctx, blobs, data, b); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		copied += b.Size
		progress(prog, "blob %d/%d %s  %s (%s in all)\n", i+1, len(m.Blobs), b.Digest, sizeText(b.Size), sizeText(copied))
	}
	if hdr, err := tr.Next(); err == nil {
		return nil, fmt.Errorf("the archive has %s after its last blob: it was not made by station hub export, or was changed", clipText(hdr.Name))
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("the archive is corrupt after its last blob: %w", err)
	}
	// Read to the end, so that a gzip stream's checksum and length are
	// checked; nothing but tar's padding may follow.
	if n, err := io.Copy(io.Discard, io.LimitReader(in, 1<<20)); err != nil {
		return nil, fmt.Errorf("the archive is truncated or corrupt at its end: %w", err)
	} else if n >= 1<<20 {
		return nil, errors.New("the archive goes on after its end")
	}
	return a, nil
}

// truncReader reads an entry's data, saying what a short read means.
type truncReader struct{ r io.Reader }

func (t truncReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("the archive is truncated: %w", err)
	}
	return n, err
}

// decodeManifest reads and checks hub-export.json.
func decodeManifest(r io.Reader) (*ExportManifest, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var m ExportManifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", exportManifestName, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", exportManifestName)
	}
	if m.Format > ExportFormat {
		return nil, fmt.Errorf("the archive has format %d, newer than this station reads (%d): import it with the station that exported it, or a newer one", m.Format, ExportFormat)
	}
	if m.Format < 1 {
		return nil, fmt.Errorf("%s: format %d is not an export's", exportManifestName, m.Format)
	}
	var supported int
	switch m.Source.Store {
	case "sqlite":
		supported = len(sqliteMigrations)
	case "postgres":
		supported = PostgresSchemaVersion
	default:
		return nil, fmt.Errorf("%s: the source store %s is neither sqlite nor postgres", exportManifestName, clipText(m.Source.Store))
	}
	if m.Source.Schema > supported {
		return nil, fmt.Errorf("the archive comes from a %s hub of schema %d, newer than this station knows (%d): it may hold what this station would drop; import it with a station as new as the exporting one", m.Source.Store, m.Source.Schema, supported)
	}
	if len(m.Tables) != len(archiveTables) {
		return nil, fmt.Errorf("%s lists %d tables, not the %d of format %d", exportManifestName, len(m.Tables), len(archiveTables), ExportFormat)
	}
	for i, t := range m.Tables {
		switch {
		case t.Name != archiveTables[i].name:
			return nil, fmt.Errorf("%s: table %d is %s, not %s: unknown tables are refused", exportManifestName, i+1, clipText(t.Name), archiveTables[i].name)
		case t.Rows < 0 || t.Bytes < 0 || t.Rows > t.Bytes:
			return nil, fmt.Errorf("%s: table %s has %d rows in %d bytes", exportManifestName, t.Name, t.Rows, t.Bytes)
		case len(t.SHA256) != 64 || strings.Trim(t.SHA256, "0123456789abcdef") != "":
			return nil, fmt.Errorf("%s: table %s has no SHA-256", exportManifestName, t.Name)
		}
	}
	for i, b := range m.Blobs {
		switch {
		case !hub.ValidDigest(b.Digest):
			return nil, fmt.Errorf("%s: blob %s is not a sha256 digest", exportManifestName, clipText(b.Digest))
		case i > 0 && b.Digest <= m.Blobs[i-1].Digest:
			return nil, fmt.Errorf("%s: blobs are not in order of digest, or one is listed twice", exportManifestName)
		case b.Size < 0 || b.Size > maxExportBlob:
			return nil, fmt.Errorf("%s: blob %s is %d bytes (at most %d are carried)", exportManifestName, b.Digest, b.Size, maxExportBlob)
		}
	}
	return &m, nil
}

// spoolTable copies a table's entry from r to the file path, checking
// each row (canonical, in key order) and the entry's rows and hash
// against want, and calls onRow (when not nil) with each row.
func spoolTable(r io.Reader, t *archTable, want ExportTable, path string, onRow func([]any) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	w := bufio.NewWriter(io.MultiWriter(f, h))
	var rows int64
	var prev []any
	err = eachLine(io.LimitReader(r, want.Bytes), func(line []byte) error {
		rows++
		row, err := decodeRow(t, line)
		if err != nil {
			return fmt.Errorf("row %d: %w", rows, err)
		}
		if prev != nil && len(t.key) > 0 && compareKeys(t, prev, row) >= 0 {
			return fmt.Errorf("row %d: rows are not in strictly increasing order of %s", rows, keyNames(t))
		}
		if len(t.key) == 0 && rows > 1 {
			return errors.New("more than one row")
		}
		prev = row
		if onRow != nil {
			if err := onRow(row); err != nil {
				return fmt.Errorf("row %d: %w", rows, err)
			}
		}
		w.Write(line)
		return w.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if rows != want.Rows {
		return fmt.Errorf("%d rows, but the manifest says %d: the archive is corrupt", rows, want.Rows)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return fmt.Errorf("its rows have SHA-256 %s, but the manifest says %s: the archive is corrupt", got, want.SHA256)
	}
	return f.Close()
}

func keyNames(t *archTable) string {
	var names []string
	for _, k := range t.key {
		names = append(names, t.cols[k].name)
	}
	return strings.Join(names, ", ")
}

// eachLine calls fn with each newline-terminated line of r (without its
// newline), each at most maxExportRow bytes. Input that does not end
// with a newline is an error.
func eachLine(r io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > maxExportRow {
				return fmt.Errorf("a row is longer than %d bytes", maxExportRow)
			}
			long = append(long, chunk...)
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(chunk) > 0 || len(long) > 0 {
				return errors.New("the last row has no newline: the entry is truncated")
			}
			return nil
		}
		if err != nil {
			return err
		}
		line := chunk[:len(chunk)-1]
		if long != nil {
			long = append(long, line...)
			line = long
		}
		if len(line) > maxExportRow {
			return fmt.Errorf("a row is longer than %d bytes", maxExportRow)
		}
		if err := fn(line); err != nil {
			return err
		}
		long = long[:0]
		if cap(long) > 1<<20 {
			long = nil
		}
	}
}

// checkBlobList checks that m lists exactly the blobs the versions name,
// each wasm with its version's size.
func checkBlobList(m *ExportManifest, refs *blobRefs) error {
	named := refs.digests()
	if len(named) != len(m.Blobs) {
		return fmt.Errorf("%s lists %d blobs, but the versions name %d", exportManifestName, len(m.Blobs), len(named))
	}
	for i, b := range m.Blobs {
		if b.Digest != named[i] {
			return fmt.Errorf("%s lists blob %s, which no version names", exportManifestName, b.Digest)
		}
		if size, ok := refs.wasm[b.Digest]; ok && size != b.Size {
			return fmt.Errorf("%s lists blob %s with %d bytes, but its version says %d", exportManifestName, b.Digest, b.Size, size)
		}
		if _, ok := refs.wasm[b.Digest]; !ok && b.Size > manifest.MaxFileSize {
			return fmt.Errorf("%s lists the manifest %s with %d bytes, more than a manifest has (%d)", exportManifestName, b.Digest, b.Size, manifest.MaxFileSize)
		}
	}
	return nil
}

// importBlob streams b's bytes from r into blobs, which checks them
// against the digest on Commit.
func importBlob(ctx context.Context, blobs Blobs, r io.Reader, b ExportBlob) error {
	w, err := blobs.Create(ctx)
	if err != nil {
		return err
	}
	defer w.Abort()
	n, err := io.Copy(w, io.LimitReader(r, b.Size))
	if err != nil {
		return err
	}
	if n != b.Size {
		return fmt.Errorf("%d bytes of %d: the archive is truncated", n, b.Size)
	}
	if err := w.Commit(b.Digest); err != nil {
		return fmt.Errorf("its bytes are not the blob its name says (the archive is corrupt): %w", err)
	}
	return nil
}

// loadTable inserts the spooled rows of t into l.
func (a *archive) loadTable(ctx context.Context, l archiveLoader, t *archTable) error {
	f, err := os.Open(a.tableFile(t))
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var long []byte
	return l.insert(ctx, t, func() ([]any, error) {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		return decodeRow(t, line[:len(line)-1])
	})
}

// versionRows calls fn with each version of the archive.
func (a *archive) versionRows(fn func(Version) error) error {
	t := archTableNamed("versions")
	f, err := os.Open(a.tableFile(t))
	if err != nil {
		return err
	}
	defer f.Close()
	return eachLine(f, func(line []byte) error {
		row, err := decodeRow(t, line)
		if err != nil {
			return err
		}
		v := Version{Version: hub.Version{
			Module: row[0].(string), Version: row[1].(string), ManifestDigest: row[2].(string), WasmDigest: row[3].(string),
			WasmSize: row[4].(int64), KeyID: row[5].(string), PublishedAt: time.Unix(0, row[7].(int64)).UTC(),
			Yanked: row[8] != nil, YankReason: row[9].(string),
		}, Signature: row[6].(string)}
		return fn(v)
	})
}

// eachArtifact calls put with blobs as an ArtifactStore (an OCI
// registry) and each version of the archive, and returns how many there
// were; with blobs that keep no artifacts, it does nothing.
func eachArtifact(blobs Blobs, a *archive, put func(ArtifactStore, Version) error) (int, error) {
	as, ok := blobs.(ArtifactStore)
	if !ok {
		return 0, nil
	}
	n := 0
	err := a.versionRows(func(v Version) error {
		if err := put(as, v); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
