package hubserver_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubserver/ocitest"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// populated is a hub with something in every table, made through its
// HTTP API, and the names and ids its reads are compared by.
type populated struct {
	h        *hubtest.Hub
	accounts []string
	reports  []string
}

// populate fills a new hub: accounts with tokens and keys (one revoked),
// modules with versions (yanked, unyanked), teams with members, pending
// invites, a member who left and lockfile pushes, reports with comments,
// awards and advisories (of a report, of the station, direct and
// withdrawn), and station releases.
func populate(t *testing.T) *populated {
	t.Helper()
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.RatePerSecond, o.Limits.Burst = 1e6, 1e6 })
	p := &populated{h: h, accounts: []string{"dave", "erin", "mallory", "root", "nobody"}}
	dave, daveKey := h.Publisher(t, "dave")
	mallory, malloryKey := h.Publisher(t, "mallory")
	erin := h.Client(t, h.Account(t, "erin"))
	root := h.Client(t, h.Account(t, "root"))
	if err := h.Store.SetAdmin(ctx, "root", true); err != nil {
		t.Fatal(err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := dave.CreateToken(ctx, "ci")
	must("create token", err)
	spare, err := hubclient.GenerateSigner()
	must("signer", err)
	k, err := mallory.AddKey(ctx, spare.PublicKey())
	must("add key", err)
	id, err := hub.ParseKeyID(k.ID)
	must("key id", err)
	_, err = mallory.RevokeKey(ctx, id)
	must("revoke key", err)

	var vs []hub.Version
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc.1"} {
		vs = append(vs, publish(t, dave, daveKey, "dave/x", v))
	}
	publish(t, mallory, malloryKey, "mallory/y", "0.1.0")
	_, err = dave.Yank(ctx, "dave/x", "1.1.0", "broken build")
	must("yank", err)
	_, err = dave.Yank(ctx, "dave/x", "2.0.0-rc.1", "oops")
	must("yank", err)
	_, err = dave.Unyank(ctx, "dave/x", "2.0.0-rc.1")
	must("unyank", err)

	_, err = dave.CreateTeam(ctx, "ops")
	must("create team", err)
	inv, err := dave.Invite(ctx, "ops", hub.InviteRequest{})
	must("invite", err)
	_, err = erin.Join(ctx, inv.Code)
	must("join", err)
	_, err = dave.Invite(ctx, "ops", hub.InviteRequest{Account: "mallory", Role: hub.RoleOwner})
	must("invite", err)
	_, err = dave.SetRole(ctx, "ops", "erin", hub.RoleOwner)
	must("set role", err)
	locked := func(v hub.Version) hub.Lockfile {
		return hub.Lockfile{Modules: []hub.LockedModule{{ID: v.Module, Version: v.Version, ManifestDigest: v.ManifestDigest, WasmDigest: v.WasmDigest}}}
	}
	tl, err := dave.PushLockfile(ctx, "ops", 0, locked(vs[0]))
	must("push lockfile", err)
	lock := locked(vs[2])
	_, err = erin.PushLockfile(ctx, "ops", tl.Revision, lock)
	must("push lockfile", err)
	_, err = mallory.CreateTeam(ctx, "red")
	must("create team", err)
	inv, err = mallory.Invite(ctx, "red", hub.InviteRequest{Account: "erin"})
	must("invite", err)
	_, err = erin.Join(ctx, inv.Code)
	must("join", err)
	must("leave", erin.Leave(ctx, "red"))

	r, err := erin.FileReport(ctx, hub.FileReportRequest{Target: "dave/x", Introduced: "1.0.0", Title: "Stored XSS <b>", Body: "The `note` field is \"unescaped\".\n\tSee — ünïcode.\n",
		CWE: "CWE-79", Severity: hub.Severity{Level: hub.SeverityHigh}, Reproduction: "curl -d 'note=<script>' $HUB\n"})
	must("file report", err)
	_, err = dave.Triage(ctx, r.ID, hub.TriageRequest{State: hub.StateTriaged, Comment: "Looking into it."})
	must("triage", err)
	_, err = erin.Comment(ctx, r.ID, hub.CommentRequest{Body: "Still there.", VerifiedIn: "1.0.0"})
	must("comment", err)
	_, err = dave.Triage(ctx, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Award: &hub.Award{Amount: 50, Reason: "clear report"}, Advisory: true})
	must("confirm", err)
	publish(t, dave, daveKey, "dave/x", "1.2.0")
	_, err = dave.Triage(ctx, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.2.0", Publish: true, Award: &hub.Award{Amount: 7, Reason: "and the fix"}})
	must("fix", err)
	private, err := mallory.FileReport(ctx, hub.FileReportRequest{Target: "dave/x", Title: "Private", Body: "secret", Severity: hub.Severity{Level: hub.SeverityLow}})
	must("file report", err)
	_, err = root.RecordRelease(ctx, "0.72.0")
	must("record release", err)
	_, err = root.RecordRelease(ctx, "0.73.0")
	must("record release", err)
	sr, err := erin.FileReport(ctx, hub.FileReportRequest{Target: hub.Product, Introduced: "0.70.0", LastAffected: "0.72.0", Title: "Station flaw", Body: "b", Severity: hub.Severity{Level: hub.SeverityCritical}})
	must("file report", err)
	_, err = root.Triage(ctx, sr.ID, hub.TriageRequest{State: hub.StateConfirmed, Advisory: true})
	must("triage", err)
	direct, err := dave.PublishAdvisory(ctx, hub.AdvisoryRequest{Target: "dave/x", Summary: "Token in the log", Details: "d",
		Severity: hub.Severity{Level: hub.SeverityMedium}, Ranges: []hub.Range{{Introduced: "0", LastAffected: "1.0.0"}}, Credits: []string{"erin"}})
	must("publish advisory", err)
	_, err = dave.WithdrawAdvisory(ctx, direct.ID, "not a flaw")
	must("withdraw advisory", err)
	p.reports = []string{r.ID, private.ID, sr.ID}
	return p
}

// reads returns every read of st a client can make of the populated hub,
// as JSON by name, and the log's end.
func (p *populated) reads(t *testing.T, st hubserver.Store) (map[string]string, int64) {
	t.Helper()
	out := map[string]string{}
	at := time.Now().Add(time.Hour) // invites live for days
	put := func(name string, v any, err error) {
		if err != nil {
			v = "error: " + err.Error()
		}
		b, jerr := json.Marshal(v)
		if jerr != nil {
			t.Fatal(jerr)
		}
		out[name] = string(b)
	}
	last, err := st.LastSeq(ctx)
	put("last seq", last, err)
	for _, a := range p.accounts {
		v, err := st.Account(ctx, a)
		put("account "+a, v, err)
		toks, err := st.Tokens(ctx, a)
		put("tokens "+a, toks, err)
		keys, err := st.Keys(ctx, a)
		put("keys "+a, keys, err)
		cr, err := st.Credits(ctx, a)
		put("credits "+a, cr, err)
		teams, err := st.TeamsOf(ctx, a)
		put("teams of "+a, teams, err)
		evs, err := st.EventsFor(ctx, a, 0, last, 1000)
		put("events for "+a, evs, err)
		for _, team := range []string{"ops", "red"} {
			inv, err := st.Invites(ctx, team, a, at)
			put("invites "+team+" as "+a, inv, err)
		}
		for _, f := range []hubserver.ReportFilter{{}, {Target: "dave/x"}, {State: hub.StateFixed}, {Mine: true}, {Target: hub.Product}} {
			f.Viewer, f.Limit = a, 100
			rs, err := st.Reports(ctx, f)
			put(fmt.Sprintf("reports %+v", f), rs, err)
		}
		for _, id := range p.reports {
			r, err := st.Report(ctx, id, a)
			put("report "+id+" as "+a, r, err)
		}
	}
	for _, id := range []string{"dave/x", "mallory/y", "nobody/z"} {
		m, err := st.Module(ctx, id)
		put("module "+id, m, err)
		if err == nil {
			for _, v := range m.Versions {
				sv, err := st.Version(ctx, id, v.Version)
				put("version "+id+"@"+v.Version, sv, err)
			}
		}
	}
	for _, q := range []string{"", "x", "test module"} {
		ms, err := st.Search(ctx, q, "", 0, 100)
		put("search "+q, ms, err)
	}
	for _, team := range []string{"ops", "red"} {
		tm, err := st.Team(ctx, team)
		put("team "+team, tm, err)
		ms, err := st.Members(ctx, team)
		put("members "+team, ms, err)
		l, err := st.Lockfile(ctx, team)
		put("lockfile "+team, l, err)
	}
	hof, err := st.HallOfFame(ctx, 100)
	put("hall of fame", hof, err)
	rel, err := st.Releases(ctx)
	put("releases", rel, err)
	for _, target := range []string{"dave/x", hub.Product} {
		as, err := st.Advisories(ctx, target)
		put("advisories "+target, as, err)
		for _, a := range as {
			one, err := st.Advisory(ctx, a.ID)
			put("advisory "+a.ID, one, err)
		}
	}
	aev, err := st.AdvisoryEvents(ctx, 0, last, 1000)
	put("advisory events", aev, err)
	// A station's cursor is a seq: from every cursor, the same events.
	for cursor := int64(0); cursor <= last; cursor++ {
		evs, err := st.EventsAfter(ctx, cursor, 1000)
		put(fmt.Sprintf("events after %d", cursor), evs, err)
	}
	return out, last
}

// sameReads fails t unless want and got are equal, naming each read that
// differs.
func sameReads(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%s: %s differs:\n source: %s\n target: %s", what, name, w, g)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d reads, want %d", what, len(got), len(want))
	}
}

// export exports st and blobs.
func export(t *testing.T, st hubserver.Store, blobs hubserver.Blobs, gz bool) ([]byte, *hubserver.ExportManifest) {
	t.Helper()
	var buf bytes.Buffer
	m, err := hubserver.Export(ctx, st, blobs, &buf, hubserver.ExportOptions{Gzip: gz})
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	return buf.Bytes(), m
}

func openSQLite(t *testing.T) (hubserver.Store, *hubserver.BlobDir, string) {
	t.Helper()
	dir := t.TempDir()
	st, blobs, err := hubserver.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, blobs, dir
}

func openPostgres(t *testing.T) (hubserver.Store, *hubserver.BlobDir) {
	t.Helper()
	st, err := hubserver.OpenPostgres(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := hubserver.OpenBlobDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st, blobs
}

func importInto(t *testing.T, archive []byte, st hubserver.Store, blobs hubserver.Blobs) *hubserver.ImportResult {
	t.Helper()
	res, err := hubserver.Import(ctx, bytes.NewReader(archive), st, blobs, hubserver.ImportOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if !res.OK || len(res.Tables) == 0 || res.Blobs.Listed == 0 || res.Blobs.Match != res.Blobs.Listed {
		t.Fatalf("import result = %+v", res)
	}
	return res
}

// sameTables fails t unless two manifests list the same tables and blobs:
// the same rows, byte for byte, whatever store they came from.
func sameTables(t *testing.T, what string, a, b *hubserver.ExportManifest) {
	t.Helper()
	ja, _ := json.Marshal([]any{a.Tables, a.Blobs})
	jb, _ := json.Marshal([]any{b.Tables, b.Blobs})
	if !bytes.Equal(ja, jb) {
		t.Errorf("%s: tables and blobs differ:\n %s\n %s", what, ja, jb)
	}
}

// continues makes the same writes in each store and checks that they
// number the next event and advisory alike: the counters carried over.
func continues(t *testing.T, stores ...hubserver.Store) {
	t.Helper()
	at := time.Date(2031, 5, 1, 0, 0, 0, 0, time.UTC)
	var first []byte
	for i, st := range stores {
		if _, err := st.CreateAccount(ctx, "zed", at); err != nil {
			t.Fatal(err)
		}
		ev, err := st.CreateTeam(ctx, "zeds", "zed", at)
		if err != nil {
			t.Fatal(err)
		}
		osv, aev, err := st.PublishAdvisory(ctx, hub.AdvisoryRequest{Target: "dave/x", Summary: "s", Details: "d", Severity: hub.Severity{Level: hub.SeverityLow},
			Ranges: []hub.Range{{Introduced: "0", LastAffected: "1.0.0"}}}, "dave", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		all, err := st.Advisories(ctx, "dave/x")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal([]any{ev.Seq, osv.ID, aev.Seq, len(all), all[len(all)-1].ID})
		if i == 0 {
			first = got
		} else if !bytes.Equal(got, first) {
			t.Errorf("after the move, store %d numbers %s, the source %s", i, got, first)
		}
	}
}

// TestExportImportRoundTrip moves a populated hub to PostgreSQL and from
// there to SQLite again, and compares every read, from every cursor.
func TestExportImportRoundTrip(t *testing.T) {
	p := populate(t)
	srcBlobs := p.h.Blobs
	want, last := p.reads(t, p.h.Store)
	if last < 20 {
		t.Fatalf("the populated hub has %d events; populate made too little", last)
	}
	archive, m1 := export(t, p.h.Store, srcBlobs, true)
	for _, tb := range m1.Tables {
		if tb.Rows == 0 && tb.Name != "tokens" {
			t.Errorf("table %s is empty in the populated hub: the round trip does not test it", tb.Name)
		}
	}
	if len(m1.Blobs) != 2*5 {
		t.Errorf("%d blobs exported, want the 10 of 5 versions", len(m1.Blobs))
	}

	pg, pgBlobs := openPostgres(t)
	res := importInto(t, archive, pg, pgBlobs)
	if res.Source != m1.Source {
		t.Errorf("result source = %+v, want %+v", res.Source, m1.Source)
	}
	got, _ := p.reads(t, pg)
	sameReads(t, "source -> PostgreSQL", want, got)

	again, m2 := export(t, pg, pgBlobs, false)
	sameTables(t, "source, PostgreSQL", m1, m2)
	lite, liteBlobs, _ := openSQLite(t)
	importInto(t, again, lite, liteBlobs)
	got, _ = p.reads(t, lite)
	sameReads(t, "PostgreSQL -> SQLite", want, got)
	_, m3 := export(t, lite, liteBlobs, false)
	sameTables(t, "source, SQLite again", m1, m3)

	continues(t, p.h.Store, pg, lite)
}

// TestExportImportSQLite moves a hub from SQLite to SQLite, while it
// serves: a write after the export's snapshot began is not in it.
func TestExportImportSQLite(t *testing.T) {
	p := populate(t)
	srcBlobs := p.h.Blobs
	want, _ := p.reads(t, p.h.Store)
	var buf bytes.Buffer
	var prog strings.Builder
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := hubserver.Export(ctx, p.h.Store, srcBlobs, pw, hubserver.ExportOptions{Progress: &prog})
		pw.CloseWithError(err)
		done <- err
	}()
	// The snapshot began with the manifest, which the first read waits for.
	head := make([]byte, 512)
	if _, err := io.ReadFull(pr, head); err != nil {
		t.Fatal(err)
	}
	if _, err := p.h.Store.CreateAccount(ctx, "late", time.Now()); err != nil {
		t.Fatalf("a write while the export reads: %v", err)
	}
	buf.Write(head)
	if _, err := io.Copy(&buf, pr); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prog.String(), "table events") || !strings.Contains(prog.String(), "blob 10/10") {
		t.Errorf("progress = %q", prog.String())
	}
	lite, liteBlobs, _ := openSQLite(t)
	importInto(t, buf.Bytes(), lite, liteBlobs)
	got, _ := p.reads(t, lite)
	sameReads(t, "SQLite -> SQLite", want, got)
	if _, err := lite.Account(ctx, "late"); !errors.Is(err, hubserver.ErrNotFound) {
		t.Errorf("the account made after the snapshot began: %v, want not found", err)
	}
}

// entry is one entry of an archive being tampered with.
type entry struct {
	hdr  tar.Header
	data []byte
}

func untar(t *testing.T, archive []byte) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{*hdr, data})
	}
}

func retar(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		e.hdr.Size = int64(len(e.data))
		if err := tw.WriteHeader(&e.hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manifestOf decodes and reencodes the manifest entry as generic JSON, so
// that a test can change what a real one holds.
func editManifest(t *testing.T, entries []entry, edit func(m map[string]any)) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(entries[0].data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	entries[0].data = data
}

// refresh makes the manifest agree with the table entries as they are
// (rows, bytes and hash), so that a tampered row meets the row checks,
// not the hash's.
func refresh(t *testing.T, entries []entry) {
	t.Helper()
	editManifest(t, entries, func(m map[string]any) {
		for _, tb := range m["tables"].([]any) {
			tb := tb.(map[string]any)
			for _, e := range entries {
				if e.hdr.Name == "tables/"+tb["name"].(string)+".jsonl" {
					sum := sha256.Sum256(e.data)
					tb["rows"], tb["bytes"], tb["sha256"] = bytes.Count(e.data, []byte("\n")), len(e.data), hex.EncodeToString(sum[:])
				}
			}
		}
	})
}

func entryNamed(t *testing.T, entries []entry, name string) *entry {
	t.Helper()
	for i := range entries {
		if entries[i].hdr.Name == name {
			return &entries[i]
		}
	}
	t.Fatalf("no entry %s", name)
	return nil
}

// TestImportRefusesHostileArchives feeds Import archives that are
// tampered with, truncated, oversized or too new, and checks that each is
// refused with nothing committed, and that the target then takes the
// real archive.
func TestImportRefusesHostileArchives(t *testing.T) {
	p := populate(t)
	srcBlobs := p.h.Blobs
	good, m := export(t, p.h.Store, srcBlobs, false)
	fresh := func() []entry { return untar(t, good) }
	v, err := p.h.Store.Version(ctx, "dave/x", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	wasm := hubserver.ExportBlob{Digest: v.WasmDigest, Size: v.WasmSize}
	// inBlob cuts the archive in the middle of the bytes of the last blob.
	last := entryNamed(t, fresh(), "blobs/sha256/"+strings.TrimPrefix(m.Blobs[len(m.Blobs)-1].Digest, "sha256:"))
	inBlob := bytes.LastIndex(good, last.data) + len(last.data)/2
	gzipped := func(data []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(data)
		zw.Close()
		return buf.Bytes()
	}
	outside := t.TempDir()

	cases := []struct {
		name    string
		archive func() []byte
		want    string
	}{
		{"not an archive", func() []byte { return []byte("hello") }, "truncated"},
		{"empty", func() []byte { return nil }, "truncated"},
		{"truncated in the tables", func() []byte { return good[:len(good)/8] }, "truncated"},
		{"truncated in a blob", func() []byte { return good[:inBlob] }, "truncated"},
		{"truncated gzip", func() []byte { z := gzipped(good); return z[:len(z)-9] }, "truncated"},
		{"corrupt gzip", func() []byte {
			z := gzipped(good)
			z[len(z)-5] ^= 0xff // its length
			return z
		}, "corrupt"},
		{"newer format", func() []byte {
			e := fresh()
			editManifest(t, e, func(m map[string]any) { m["format"] = hubserver.ExportFormat + 1 })
			return retar(t, e)
		}, "newer than this station reads"},
		{"newer schema", func() []byte {
			e := fresh()
			editManifest(t, e, func(m map[string]any) { m["source"].(map[string]any)["schema"] = 99 })
			return retar(t, e)
		}, "newer than this station knows"},
		{"unknown field", func() []byte {
			e := fresh()
			editManifest(t, e, func(m map[string]any) { m["extra"] = true })
			return retar(t, e)
		}, "unknown field"},
		{"unknown table", func() []byte {
			e := fresh()
			editManifest(t, e, func(m map[string]any) { m["tables"].([]any)[3].(map[string]any)["name"] = "shadow" })
			return retar(t, e)
		}, "unknown tables are refused"},
		{"unknown column", func() []byte {
			e := fresh()
			a := entryNamed(t, e, "tables/accounts.jsonl")
			a.data = bytes.Replace(a.data, []byte(`"admin":false}`), []byte(`"admin":false,"password":"x"}`), 1)
			refresh(t, e)
			return retar(t, e)
		}, `unknown column "password"`},
		{"missing column", func() []byte {
			e := fresh()
			a := entryNamed(t, e, "tables/accounts.jsonl")
			a.data = bytes.Replace(a.data, []byte(`,"admin":false}`), []byte(`}`), 1)
			refresh(t, e)
			return retar(t, e)
		}, "no column admin"},
		{"not canonical", func() []byte {
			e := fresh()
			a := entryNamed(t, e, "tables/accounts.jsonl")
			a.data = bytes.Replace(a.data, []byte(`"admin":false}`), []byte(`"admin": false}`), 1)
			refresh(t, e)
			return retar(t, e)
		}, "canonical"},
		{"rows out of order", func() []byte {
			e := fresh()
			a := entryNamed(t, e, "tables/accounts.jsonl")
			lines := bytes.SplitAfter(a.data, []byte("\n"))
			lines[0], lines[1] = lines[1], lines[0]
			a.data = bytes.Join(lines, nil)
			refresh(t, e)
			return retar(t, e)
		}, "strictly increasing order"},
		{"a changed row", func() []byte {
			e := fresh()
			a := entryNamed(t, e, "tables/accounts.jsonl")
			a.data = bytes.Replace(a.data, []byte(`"admin":false}`), []byte(`"admin":true}`), 1)
			refresh(t, e)
			editManifest(t, e, func(mm map[string]any) { mm["tables"].([]any)[0].(map[string]any)["sha256"] = m.Tables[0].SHA256 })
			return retar(t, e)
		}, "but the manifest says " + m.Tables[0].SHA256},
		{"a row more", func() []byte {
			e := fresh()
			a := entryNamed(t, e, "tables/accounts.jsonl")
			a.data = append(bytes.Clone(a.data), `{"name":"zz","created_at":1,"admin":true}`+"\n"...)
			return retar(t, e)
		}, fmt.Sprintf("more than %d", m.Tables[0].Bytes)},
		{"event counter below the log", func() []byte {
			e := fresh()
			entryNamed(t, e, "tables/event_seq.jsonl").data = []byte(`{"last":1}` + "\n")
			refresh(t, e)
			return retar(t, e)
		}, "beyond the counter"},
		{"path traversal", func() []byte {
			e := fresh()
			entryNamed(t, e, "tables/accounts.jsonl").hdr.Name = "../../" + filepath.Base(outside) + "/accounts.jsonl"
			return retar(t, e)
		}, "where tables/accounts.jsonl belongs"},
		{"a link", func() []byte {
			e := fresh()
			a := entryNamed(t, e, "tables/accounts.jsonl")
			a.hdr.Typeflag, a.hdr.Linkname, a.data = tar.TypeSymlink, "/etc/passwd", nil
			return retar(t, e)
		}, "not a regular file"},
		{"blob bytes not its digest", func() []byte {
			e := fresh()
			b := entryNamed(t, e, "blobs/sha256/"+strings.TrimPrefix(wasm.Digest, "sha256:"))
			b.data = bytes.Clone(b.data)
			b.data[len(b.data)-1] ^= 1
			return retar(t, e)
		}, "not the blob its name says"},
		{"a blob more", func() []byte {
			e := fresh()
			editManifest(t, e, func(m map[string]any) {
				m["blobs"] = append(m["blobs"].([]any), map[string]any{"digest": "sha256:" + strings.Repeat("f", 64), "size": 8})
			})
			return retar(t, e)
		}, "but the versions name"},
		{"a blob no version names", func() []byte {
			e := fresh()
			editManifest(t, e, func(m map[string]any) {
				bs := m["blobs"].([]any)
				bs[len(bs)-1].(map[string]any)["digest"] = "sha256:" + strings.Repeat("f", 64)
			})
			return retar(t, e)
		}, "which no version names"},
		{"blob listed larger than its version", func() []byte {
			e := fresh()
			editManifest(t, e, func(m map[string]any) {
				for _, b := range m["blobs"].([]any) {
					if b := b.(map[string]any); b["digest"] == wasm.Digest {
						b["size"] = wasm.Size + 1
					}
				}
			})
			return retar(t, e)
		}, "but its version says"},
		{"an entry after the last blob", func() []byte {
			e := fresh()
			e = append(e, entry{tar.Header{Typeflag: tar.TypeReg, Name: "tables/accounts.jsonl", Mode: 0o600}, []byte("{}\n")})
			return retar(t, e)
		}, "after its last blob"},
		{"oversized manifest", func() []byte {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "hub-export.json", Size: 1 << 40, Mode: 0o600})
			tw.Write([]byte("{"))
			return buf.Bytes()
		}, "more than"},
		{"oversized row", func() []byte {
			e := fresh()
			a := entryNamed(t, e, "tables/accounts.jsonl")
			a.data = append(bytes.Repeat([]byte("x"), 65<<20), '\n')
			refresh(t, e)
			return retar(t, e)
		}, "longer than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, blobs, _ := openSQLite(t)
			_, err := hubserver.Import(ctx, bytes.NewReader(c.archive()), st, blobs, hubserver.ImportOptions{TempDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("import = %v, want an error with %q", err, c.want)
			}
			if n, err := st.LastSeq(ctx); n != 0 || err != nil {
				t.Fatalf("after a refused import the target has %d events (%v)", n, err)
			}
			if _, err := st.Account(ctx, "dave"); !errors.Is(err, hubserver.ErrNotFound) {
				t.Fatalf("after a refused import: account dave: %v", err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("import wrote %v outside its directories", ents)
			}
		})
	}

	t.Run("a target with data", func(t *testing.T) {
		st, blobs, _ := openSQLite(t)
		importInto(t, good, st, blobs)
		_, err := hubserver.Import(ctx, bytes.NewReader(good), st, blobs, hubserver.ImportOptions{TempDir: t.TempDir()})
		var ne *hubserver.NotEmptyError
		if !errors.As(err, &ne) || ne.Rows["accounts"] != 4 || !strings.Contains(err.Error(), "new database") {
			t.Fatalf("import into a hub = %v, want a NotEmptyError", err)
		}
	})
	t.Run("a refused import leaves the target usable", func(t *testing.T) {
		st, blobs, _ := openSQLite(t)
		bad := fresh()
		b := entryNamed(t, bad, "blobs/sha256/"+strings.TrimPrefix(m.Blobs[len(m.Blobs)-1].Digest, "sha256:"))
		b.data = bytes.Repeat([]byte{0}, len(b.data))
		if _, err := hubserver.Import(ctx, bytes.NewReader(retar(t, bad)), st, blobs, hubserver.ImportOptions{TempDir: t.TempDir()}); err == nil {
			t.Fatal("import of a corrupt blob succeeded")
		}
		importInto(t, good, st, blobs)
	})
}

// TestImportVerifies checks that the comparison after the commit finds a
// blob the target's store does not hold whole.
func TestImportVerifies(t *testing.T) {
	p := populate(t)
	srcBlobs := p.h.Blobs
	archive, m := export(t, p.h.Store, srcBlobs, false)
	st, _, dir := openSQLite(t)
	blobs := &losingBlobs{BlobDir: mustBlobDir(t, filepath.Join(dir, "blobs")), lose: m.Blobs[0].Digest}
	res, err := hubserver.Import(ctx, bytes.NewReader(archive), st, blobs, hubserver.ImportOptions{TempDir: t.TempDir()})
	var ve *hubserver.VerifyError
	if !errors.As(err, &ve) || ve.Blobs != 1 || ve.Tables != 0 || res == nil || res.OK || len(res.Blobs.Bad) != 1 || !strings.HasPrefix(res.Blobs.Bad[0], m.Blobs[0].Digest) {
		t.Fatalf("import into a store that loses a blob = %+v, %v", res, err)
	}
}

func mustBlobDir(t *testing.T, dir string) *hubserver.BlobDir {
	t.Helper()
	b, err := hubserver.OpenBlobDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// losingBlobs is a blob store that says it has one blob it has not.
type losingBlobs struct {
	*hubserver.BlobDir
	lose string
}

func (b *losingBlobs) Open(c context.Context, digest string) (io.ReadCloser, error) {
	if digest == b.lose {
		return nil, hubserver.ErrNotFound
	}
	return b.BlobDir.Open(c, digest)
}

// TestExportImportOCI moves a hub onto PostgreSQL and an OCI registry:
// every blob in the registry, each version's artifact stored and tagged,
// and an export of the new hub holds what the old one's did.
func TestExportImportOCI(t *testing.T) {
	p := populate(t)
	srcBlobs := p.h.Blobs
	want, _ := p.reads(t, p.h.Store)
	archive, m1 := export(t, p.h.Store, srcBlobs, true)
	pg, _ := openPostgres(t)
	reg, err := hubserver.OpenBlobs(ctx, ocitest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.(hubserver.ArtifactStore); !ok {
		t.Fatalf("%T keeps no artifacts", reg)
	}
	res := importInto(t, archive, pg, reg)
	if res.Artifacts != 5 {
		t.Errorf("%d artifacts, want one for each of the 5 versions", res.Artifacts)
	}
	got, _ := p.reads(t, pg)
	sameReads(t, "source -> PostgreSQL and OCI", want, got)
	_, m2 := export(t, pg, reg, false)
	sameTables(t, "source, PostgreSQL and OCI", m1, m2)
}
