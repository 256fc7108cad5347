package hub

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// TestExportImport moves a data directory's hub onto PostgreSQL with the
// commands: export to a file, import with --json, and checks the
// comparison, the refusals (an existing archive, a target with data, a
// truncated archive) and that the password of --db is never printed.
func TestExportImport(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	src := t.TempDir()
	st, blobs, err := hubserver.OpenDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hubserver.CreateAccount(ctx, st, "dave", "test", at); err != nil {
		t.Fatal(err)
	}
	man, wasm := []byte("id: dave/x\n"), append([]byte(hubapi.WasmMagic), "body"...)
	for _, b := range [][]byte{man, wasm} {
		if err := blobs.Put(ctx, hubapi.Digest(b), b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Publish(ctx, hubserver.Version{Version: hubapi.Version{Module: "dave/x", Version: "1.0.0", ManifestDigest: hubapi.Digest(man),
		WasmDigest: hubapi.Digest(wasm), WasmSize: int64(len(wasm)), KeyID: "0000000000000001", PublishedAt: at}, Signature: "sig"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	archive := filepath.Join(t.TempDir(), "hub.tar.gz")
	io, _, errb := streams("", nil)
	if err := exportRun(ctx, &ExportOptions{IO: io, Data: src, Output: archive}); err != nil {
		t.Fatalf("export: %v", err)
	}
	if fi, err := os.Stat(archive); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the archive: %v, %v; want mode 0600", fi, err)
	}
	if !strings.Contains(errb.String(), "table accounts") || !strings.Contains(errb.String(), "and 2 blobs") {
		t.Errorf("export's progress = %q", errb)
	}
	if err := exportRun(ctx, &ExportOptions{IO: io, Data: src, Output: archive}); err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Errorf("export onto an existing file = %v", err)
	}
	if err := exportRun(ctx, &ExportOptions{IO: io, Data: t.TempDir(), Output: archive + "2"}); err == nil || !strings.Contains(err.Error(), "no hub in") {
		t.Errorf("export of an empty directory = %v", err)
	}

	dsn := pgtest.DSN(t)
	secret := strings.Replace(dsn, "postgres@", "postgres:hunter2@", 1)
	target := t.TempDir()
	run := func(file string) (ImportOutput, string, error) {
		io, out, errb := streams("", nil)
		err := importRun(ctx, &ImportOptions{IO: io, File: file, DB: secret, Blobs: target, JSON: true})
		if strings.Contains(out.String()+errb.String(), "hunter2") || err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("import printed the password: %s %s %v", out, errb, err)
		}
		var res ImportOutput
		if out.Len() > 0 {
			if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
				t.Fatalf("--json: %v: %s", jerr, out)
			}
		}
		return res, errb.String(), err
	}

	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.tar.gz")
	os.WriteFile(cut, data[:len(data)/2], 0o600)
	if _, _, err := run(cut); err == nil || !strings.Contains(err.Error(), "nothing was committed") && !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("import of a truncated archive = %v", err)
	}

	res, progress, err := run(archive)
	if err != nil || !res.OK || res.Blobs.Listed != 2 || res.Blobs.Match != 2 || res.Source.Store != "sqlite" {
		t.Fatalf("import = %+v, %v", res.ImportResult, err)
	}
	for _, tb := range res.Tables {
		if !tb.Match || tb.SourceRows != tb.TargetRows || tb.SourceSHA256 != tb.TargetSHA256 {
			t.Errorf("table %+v", tb)
		}
	}
	if !strings.Contains(progress, "committed") {
		t.Errorf("import's progress = %q", progress)
	}
	pg, err := hubserver.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if v, err := pg.Version(ctx, "dave/x", "1.0.0"); err != nil || v.WasmSize != int64(len(wasm)) || !v.PublishedAt.Equal(at) {
		t.Errorf("the imported version = %+v, %v", v, err)
	}

	var ne *hubserver.NotEmptyError
	if _, _, err := run(archive); !errors.As(err, &ne) {
		t.Errorf("import into the hub it made = %v, want a NotEmptyError", err)
	}

	// The text comparison.
	io, out, _ := streams("", nil)
	if err := (ImportOutput{res.ImportResult}).Text(out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "accounts") || !strings.Contains(out.String(), "imported and verified") {
		t.Errorf("text = %s", out)
	}
	bad := *res.ImportResult
	bad.OK, bad.Tables = false, append([]hubserver.TableCheck{{Name: "events", SourceRows: 3, TargetRows: 2}}, bad.Tables...)
	out.Reset()
	ImportOutput{&bad}.Text(out)
	if !strings.Contains(out.String(), "NO") || !strings.Contains(out.String(), "do not serve from it") {
		t.Errorf("text of a mismatch = %s", out)
	}

	if err := importRun(ctx, &ImportOptions{IO: io, File: archive, DB: secret}); err == nil || !strings.Contains(err.Error(), "needs --blobs") {
		t.Errorf("import --db without --blobs = %v", err)
	}
}
