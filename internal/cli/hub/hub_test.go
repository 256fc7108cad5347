package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubsync"
)

// find returns the subcommand of c at path.
func find(t *testing.T, c *cobra.Command, path ...string) *cobra.Command {
	t.Helper()
	sub, rest, err := c.Find(path)
	if err != nil || len(rest) != 0 {
		t.Fatalf("%v: %v (left %v)", path, err, rest)
	}
	return sub
}

// TestStationFlagsOnlyWhereAStationIsUsed: login, logout, whoami and the
// key commands read or write the station home and take --home and
// --no-daemon; serve and user work on a hub's data and list neither.
func TestStationFlagsOnlyWhereAStationIsUsed(t *testing.T) {
	c := NewCmdHub(clitest.Factory())
	for _, path := range [][]string{{"login"}, {"logout"}, {"whoami"}, {"key", "create"}, {"key", "list"}} {
		sub := find(t, c, path...)
		for _, name := range []string{"home", "no-daemon"} {
			if sub.Flags().Lookup(name) == nil && sub.PersistentFlags().Lookup(name) == nil && sub.InheritedFlags().Lookup(name) == nil {
				t.Errorf("hub %s has no --%s", strings.Join(path, " "), name)
			}
		}
	}
	for _, path := range [][]string{{"serve"}, {"user", "create"}, {"user", "token"}, {"user", "admin"}} {
		sub := find(t, c, path...)
		for _, name := range []string{"home", "no-daemon"} {
			if sub.Flags().Lookup(name) != nil || sub.PersistentFlags().Lookup(name) != nil || sub.InheritedFlags().Lookup(name) != nil {
				t.Errorf("hub %s lists --%s, which it does not use", strings.Join(path, " "), name)
			}
		}
	}
}

func TestFlags(t *testing.T) {
	code := func(t *testing.T, err error, want int) bool {
		t.Helper()
		if got := cmdutil.ExitCode(err); got != want {
			t.Errorf("exit %d (%v), want %d", got, err, want)
			return false
		}
		return want == 0
	}
	f := clitest.Factory()

	var login *LoginOptions
	if code(t, clitest.Parse(NewCmdLogin(f, func(o *LoginOptions) error { login = o; return nil }), "--url", "http://127.0.0.1:1", "--token-stdin", "--json"), 0) &&
		(login.URL != "http://127.0.0.1:1" || !login.TokenStdin || !login.JSON) {
		t.Errorf("login options %+v", login)
	}
	err := clitest.Parse(NewCmdLogin(f, func(*LoginOptions) error { return nil }), "--token-stdin")
	if code(t, err, cmdutil.ExitUsage); !strings.Contains(err.Error(), "--url is required") {
		t.Errorf("login without --url: %v", err)
	}
	code(t, clitest.Parse(NewCmdLogout(f, func(*LogoutOptions) error { return nil }), "extra"), cmdutil.ExitUsage)

	var kc *KeyCreateOptions
	for _, args := range [][]string{{"--key", "/k.pem", "--force", "--json"}, {"--file", "/k.pem", "--force", "--json"}} {
		kc = nil
		if code(t, clitest.Parse(NewCmdKeyCreate(f, func(o *KeyCreateOptions) error { kc = o; return nil }), args...), 0) &&
			(kc.Key != "/k.pem" || !kc.Force || !kc.JSON) {
			t.Errorf("key create %v: options %+v", args, kc)
		}
	}
	// --file is the former name: hidden from the help, and it says so.
	var errb bytes.Buffer
	kf := cmdutil.New(cmdutil.IOStreams{Out: &bytes.Buffer{}, Err: &errb})
	kcmd := NewCmdKeyCreate(kf, func(*KeyCreateOptions) error { return nil })
	if fl := kcmd.Flags().Lookup("file"); fl == nil || !fl.Hidden {
		t.Error("--file is not a hidden flag of hub key create")
	}
	clitest.Parse(kcmd, "--file", "/k.pem")
	if !strings.Contains(errb.String(), "--file is deprecated: use --key PATH") {
		t.Errorf("--file does not say it is deprecated: %q", errb.String())
	}

	var kl *KeyListOptions
	if code(t, clitest.Parse(NewCmdKeyList(f, func(o *KeyListOptions) error { kl = o; return nil }), "--key", "/k.pem", "--json"), 0) && (kl.Key != "/k.pem" || !kl.JSON) {
		t.Errorf("key list options %+v", kl)
	}
	var who *WhoamiOptions
	if code(t, clitest.Parse(NewCmdWhoami(f, func(o *WhoamiOptions) error { who = o; return nil }), "--json"), 0) && !who.JSON {
		t.Errorf("whoami options %+v", who)
	}

	for _, tc := range []struct {
		new    func(*cmdutil.Factory, func(*TokenOptions) error) *cobra.Command
		create bool
	}{{NewCmdUserCreate, true}, {NewCmdUserToken, false}} {
		var got *TokenOptions
		if code(t, clitest.Parse(tc.new(f, func(o *TokenOptions) error { got = o; return nil }), "dave", "--data", "/d", "--label", "ci", "--json"), 0) {
			got.IO, got.Issue = nil, nil
			if want := (TokenOptions{Name: "dave", Data: "/d", Label: "ci", Create: tc.create, JSON: true}); !reflect.DeepEqual(*got, want) {
				t.Errorf("user options %+v, want %+v", *got, want)
			}
		}
		code(t, clitest.Parse(tc.new(f, func(*TokenOptions) error { return nil })), cmdutil.ExitUsage)
	}
	var created *TokenOptions
	if code(t, clitest.Parse(NewCmdUserCreate(f, func(o *TokenOptions) error { created = o; return nil }), "root", "--admin"), 0) && !created.Admin {
		t.Errorf("user create --admin: options %+v", created)
	}
	code(t, clitest.Parse(NewCmdUserToken(f, func(*TokenOptions) error { return nil }), "dave", "--admin"), cmdutil.ExitUsage)
	var admin *AdminOptions
	if code(t, clitest.Parse(NewCmdUserAdmin(f, func(o *AdminOptions) error { admin = o; return nil }), "erin", "--revoke", "--data", "/d", "--json"), 0) {
		admin.IO, admin.SetAdmin = nil, nil
		if want := (AdminOptions{Name: "erin", Revoke: true, Data: "/d", JSON: true}); !reflect.DeepEqual(*admin, want) {
			t.Errorf("user admin options %+v, want %+v", *admin, want)
		}
	}
	code(t, clitest.Parse(NewCmdUserAdmin(f, func(*AdminOptions) error { return nil })), cmdutil.ExitUsage)

	var serve *ServeOptions
	if code(t, clitest.Parse(NewCmdServe(f, func(o *ServeOptions) error { serve = o; return nil }), "--addr", "127.0.0.1:0", "--max-wasm", "64MiB", "--rate", "5", "--burst", "7"), 0) &&
		(serve.Addr != "127.0.0.1:0" || serve.Limits.MaxWasmBytes != 64<<20 || serve.Limits.RatePerSecond != 5 || serve.Limits.Burst != 7) {
		t.Errorf("serve options %+v", serve)
	}
	code(t, clitest.Parse(NewCmdServe(f, func(*ServeOptions) error { return nil }), "--max-wasm", "lots"), cmdutil.ExitUsage)
	if code(t, clitest.Parse(NewCmdServe(f, func(o *ServeOptions) error { serve = o; return nil }), "--public-url", "https://hub.example.com/"), 0) && serve.PublicURL != "https://hub.example.com/" {
		t.Errorf("serve --public-url: options %+v", serve)
	}
	for _, u := range []string{"hub.example.com", "ftp://hub.example.com", "https://user:pw@hub.example.com", "https://hub.example.com/?x=1"} {
		code(t, clitest.Parse(NewCmdServe(f, func(*ServeOptions) error { return nil }), "--public-url", u), cmdutil.ExitUsage)
	}
	code(t, clitest.Parse(NewCmdHub(f), "frobnicate"), cmdutil.ExitUsage)
}

// fake is a Service with canned answers.
type fake struct {
	id      hubsync.Identity
	created hubsync.CreatedKey
	keys    hubsync.KeyList
	err     error

	file    string
	replace bool
}

func (f *fake) WhoAmI(context.Context) (hubsync.Identity, error) { return f.id, f.err }
func (f *fake) CreateKey(_ context.Context, file string, replace bool) (hubsync.CreatedKey, error) {
	f.file, f.replace = file, replace
	return f.created, f.err
}
func (f *fake) Keys(_ context.Context, file string) (hubsync.KeyList, error) {
	f.file = file
	return f.keys, f.err
}

// streams returns streams with stdin and buffers for the output.
func streams(stdin string, env map[string]string) (*cmdutil.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }}, &out, &errb
}

func (f *fake) session() func(context.Context) (Service, error) {
	return func(context.Context) (Service, error) { return f, nil }
}

func TestWhoamiAndLogin(t *testing.T) {
	ctx := context.Background()
	svc := &fake{id: hubsync.Identity{Hub: "https://hub.example", Account: "dave"}}
	io, out, _ := streams("", nil)
	if err := whoamiRun(ctx, &WhoamiOptions{IO: io, Session: svc.session()}); err != nil || out.String() != "dave on https://hub.example\n" {
		t.Errorf("whoami: %q, %v", out.String(), err)
	}
	io, out, _ = streams("", nil)
	if err := whoamiRun(ctx, &WhoamiOptions{IO: io, Session: svc.session(), JSON: true}); err != nil {
		t.Fatal(err)
	}
	var id map[string]string
	if err := json.Unmarshal(out.Bytes(), &id); err != nil || id["hub"] != "https://hub.example" || id["account"] != "dave" {
		t.Errorf("whoami --json: %s (%v)", out.String(), err)
	}
	want := errors.New("boom")
	if err := whoamiRun(ctx, &WhoamiOptions{IO: io, Session: (&fake{err: want}).session()}); !errors.Is(err, want) {
		t.Errorf("whoami error: %v", err)
	}

	// The token: from stdin with --token-stdin, else the environment.
	var gotURL, gotToken string
	login := func(_ context.Context, url, token string) (hubsync.Identity, error) {
		gotURL, gotToken = url, token
		return hubsync.Identity{Hub: url, Account: "dave"}, nil
	}
	io, out, _ = streams("sth_fromstdin\n", map[string]string{"STATION_HUB_TOKEN": "sth_fromenv"})
	if err := loginRun(ctx, &LoginOptions{IO: io, Login: login, URL: "http://127.0.0.1:1", TokenStdin: true}); err != nil || gotToken != "sth_fromstdin\n" || gotURL != "http://127.0.0.1:1" {
		t.Errorf("login from stdin: token %q, %v", gotToken, err)
	}
	if out.String() != "logged in to http://127.0.0.1:1 as dave\n" {
		t.Errorf("login printed %q", out.String())
	}
	io, out, _ = streams("sth_fromstdin\n", map[string]string{"STATION_HUB_TOKEN": "sth_fromenv"})
	if err := loginRun(ctx, &LoginOptions{IO: io, Login: login, URL: "u", JSON: true}); err != nil || gotToken != "sth_fromenv" || !json.Valid(out.Bytes()) {
		t.Errorf("login from the environment: token %q, %s, %v", gotToken, out.String(), err)
	}

	io, out, _ = streams("", nil)
	called := false
	if err := logoutRun(ctx, &LogoutOptions{IO: io, Logout: func(context.Context) error { called = true; return nil }}); err != nil || !called || out.String() != "logged out\n" {
		t.Errorf("logout: %q, %v", out.String(), err)
	}
}

func TestKeyCreateAndList(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	k := hubapi.Key{ID: "43B1B49C6BC0417B", Account: "dave", PublicKey: "RWR...", CreatedAt: at}
	svc := &fake{created: hubsync.CreatedKey{Key: k, File: "/h/hub-signing-key.pem"}}
	io, out, _ := streams("", nil)
	if err := keyCreateRun(ctx, &KeyCreateOptions{IO: io, Session: svc.session(), Key: "/k.pem"}); err != nil {
		t.Fatal(err)
	}
	if svc.file != "/k.pem" || svc.replace {
		t.Errorf("CreateKey(%q, %v)", svc.file, svc.replace)
	}
	if want := "key 43B1B49C6BC0417B registered for dave; private key in /h/hub-signing-key.pem (keep it secret, back it up)\n"; out.String() != want {
		t.Errorf("key create printed %q, want %q", out.String(), want)
	}

	svc.created.Replaced, svc.created.Backup = "0011223344556677", "/h/hub-signing-key.pem.0011223344556677.old"
	io, out, _ = streams("", nil)
	if err := keyCreateRun(ctx, &KeyCreateOptions{IO: io, Session: svc.session(), Force: true}); err != nil || !svc.replace {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "replaced key 0011223344556677, now in /h/hub-signing-key.pem.0011223344556677.old") ||
		!strings.Contains(out.String(), "stations that pinned it will ask their operators before trusting versions signed by 43B1B49C6BC0417B") {
		t.Errorf("rotation printed %q", out.String())
	}
	io, out, _ = streams("", nil)
	if err := keyCreateRun(ctx, &KeyCreateOptions{IO: io, Session: svc.session(), JSON: true}); err != nil {
		t.Fatal(err)
	}
	var created struct {
		Key              map[string]any
		File             string
		Replaced, Backup string
	}
	if err := json.Unmarshal(out.Bytes(), &created); err != nil || created.Key["id"] != k.ID || created.Replaced != "0011223344556677" || created.File == "" {
		t.Errorf("key create --json: %s (%v)", out.String(), err)
	}

	// A second create is refused by the service; its hint says how to
	// rotate.
	exists := &hubsync.KeyExistsError{File: "/h/hub-signing-key.pem", KeyID: k.ID}
	err := keyCreateRun(ctx, &KeyCreateOptions{IO: io, Session: (&fake{err: exists}).session()})
	if !errors.Is(err, exists) || !strings.Contains(cmdutil.Hint(err), "station hub key create --force") {
		t.Errorf("key create over a key: %v, hint %q", err, cmdutil.Hint(err))
	}

	revoked := at.Add(time.Hour)
	svc.keys = hubsync.KeyList{Account: "dave", File: "/h/hub-signing-key.pem", LocalID: k.ID,
		Keys: []hubapi.Key{{ID: "0011223344556677", Account: "dave", CreatedAt: at, RevokedAt: &revoked}, k}}
	io, out, _ = streams("", nil)
	if err := keyListRun(ctx, &KeyListOptions{IO: io, Session: svc.session()}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[1], "revoked ") || !regexp.MustCompile(`^43B1B49C6BC0417B\s+\S+\s+active\s+yes \(/h/hub-signing-key.pem\)$`).MatchString(lines[2]) {
		t.Errorf("key list:\n%s", out.String())
	}
	for _, tc := range []struct {
		l    hubsync.KeyList
		want string
	}{
		{hubsync.KeyList{Account: "dave", File: "/f"}, "dave has no keys on the hub (make one: station hub key create)\nno key file at /f\n"},
		{hubsync.KeyList{Account: "dave", File: "/f", LocalID: "AA", Keys: []hubapi.Key{k}}, "the key in /f (AA) is not registered to dave on this hub"},
		{hubsync.KeyList{Account: "dave", File: "/f", LocalError: "load signing key: bad", Keys: []hubapi.Key{k}}, "this station's key file: load signing key: bad\n"},
	} {
		io, out, _ = streams("", nil)
		if err := keyListRun(ctx, &KeyListOptions{IO: io, Session: (&fake{keys: tc.l}).session()}); err != nil || !strings.Contains(out.String(), tc.want) {
			t.Errorf("key list of %+v:\n%s\nwant %q (%v)", tc.l, out.String(), tc.want, err)
		}
	}
	io, out, _ = streams("", nil)
	if err := keyListRun(ctx, &KeyListOptions{IO: io, Session: svc.session(), JSON: true}); err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Keys    []map[string]any
		LocalID string `json:"local_id"`
	}
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed.Keys) != 2 || listed.LocalID != k.ID || listed.Keys[0]["revoked_at"] == nil {
		t.Errorf("key list --json: %s (%v)", out.String(), err)
	}
}

func TestUserTokens(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	var gotDir, gotName, gotLabel string
	var gotCreate, gotAdmin bool
	issue := func(_ context.Context, dir, name, label string, create, admin bool) (hubapi.NewToken, error) {
		gotDir, gotName, gotLabel, gotCreate, gotAdmin = dir, name, label, create, admin
		return hubapi.NewToken{Token: hubapi.Token{ID: "tok1", Label: label}, Secret: "sth_secret"}, nil
	}
	io, out, errb := streams("", map[string]string{"STATION_HUB_DATA": data})
	if err := tokenRun(ctx, &TokenOptions{IO: io, Issue: issue, Name: "dave", Label: "cli", Create: true}); err != nil {
		t.Fatal(err)
	}
	if gotDir != data || gotName != "dave" || gotLabel != "cli" || !gotCreate {
		t.Errorf("issued in %s for %s (%s, create %v)", gotDir, gotName, gotLabel, gotCreate)
	}
	if out.String() != "sth_secret\n" || errb.String() != "created account dave; its token (shown once, store it now):\n" || gotAdmin {
		t.Errorf("user create printed %q and %q (admin %v)", out.String(), errb.String(), gotAdmin)
	}
	io, out, errb = streams("", map[string]string{"STATION_HUB_DATA": data})
	if err := tokenRun(ctx, &TokenOptions{IO: io, Issue: issue, Name: "root", Label: "cli", Create: true, Admin: true}); err != nil || !gotAdmin {
		t.Fatalf("user create --admin: admin %v, %v", gotAdmin, err)
	}
	if out.String() != "sth_secret\n" || errb.String() != "created admin account root; its token (shown once, store it now):\n" {
		t.Errorf("user create --admin printed %q and %q", out.String(), errb.String())
	}
	// --data wins over the environment, relative to the working directory.
	io, out, errb = streams("", map[string]string{"STATION_HUB_DATA": data})
	if err := tokenRun(ctx, &TokenOptions{IO: io, Issue: issue, Data: "rel", Name: "dave", Label: "ci", JSON: true}); err != nil {
		t.Fatal(err)
	}
	if abs, _ := filepath.Abs("rel"); gotDir != abs || gotCreate {
		t.Errorf("--data rel: issued in %s, create %v", gotDir, gotCreate)
	}
	// The secret is what the JSON is for: it is in it, printed this once.
	var tok map[string]any
	if err := json.Unmarshal(out.Bytes(), &tok); err != nil || tok["secret"] != "sth_secret" || tok["account"] != "dave" || tok["id"] != "tok1" || tok["label"] != "ci" || tok["created"] != false {
		t.Errorf("user token --json: %s (%v)", out.String(), err)
	}
	if errb.Len() != 0 {
		t.Errorf("user token --json wrote to stderr: %q", errb.String())
	}
}

// TestUserTokensInAHubDirectory runs the real Issuer: an account and a
// token in a new data directory, then another token, and a token for an
// account that does not exist or in a directory without a hub.
func TestUserTokensInAHubDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := issue(ctx, t.TempDir(), "dave", "cli", false, false); err == nil || !strings.Contains(err.Error(), "no hub database") {
		t.Errorf("token without a hub: %v", err)
	}
	first, err := issue(ctx, dir, "dave", "cli", true, false)
	if err != nil || !strings.HasPrefix(first.Secret, hubapi.TokenPrefix) {
		t.Fatalf("create: %+v, %v", first, err)
	}
	if _, err := issue(ctx, dir, "dave", "cli", true, false); hubapi.CodeOf(err) != hubapi.CodeAccountExists {
		t.Errorf("create twice: %v", err)
	}
	second, err := issue(ctx, dir, "dave", "ci", false, false)
	if err != nil || second.Secret == first.Secret || second.Label != "ci" {
		t.Errorf("token: %+v, %v", second, err)
	}
	if _, err := issue(ctx, dir, "nobody", "ci", false, false); err == nil {
		t.Error("a token for an account that does not exist")
	}
	if _, err := issue(ctx, dir, "root", "cli", true, true); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"dave": false, "root": true} {
		if got := isAdminIn(t, dir, name); got != want {
			t.Errorf("%s is an admin: %v, want %v", name, got, want)
		}
	}
}

// isAdminIn reads whether name is an admin of the hub in dir.
func isAdminIn(t *testing.T, dir, name string) bool {
	t.Helper()
	st, _, err := hubserver.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.Account(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return a.Admin
}

// TestUserAdminInAHubDirectory runs the real AdminSetter: an account made
// an admin and back, and the refusals (no hub, no such account, a bad
// name), each of which changes nothing.
func TestUserAdminInAHubDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := setAdmin(ctx, t.TempDir(), "erin", true); err == nil || !strings.Contains(err.Error(), "no hub database") {
		t.Errorf("admin without a hub: %v", err)
	}
	if _, err := issue(ctx, dir, "erin", "cli", true, false); err != nil {
		t.Fatal(err)
	}
	if err := setAdmin(ctx, dir, "nobody", true); hubapi.CodeOf(err) != hubapi.CodeAccountNotFound || !strings.Contains(err.Error(), "user create nobody --admin") {
		t.Errorf("admin of nobody: %v", err)
	}
	if err := setAdmin(ctx, dir, "Erin\x1b", true); hubapi.CodeOf(err) != hubapi.CodeInvalidName {
		t.Errorf("admin of a bad name: %v", err)
	}
	if isAdminIn(t, dir, "erin") {
		t.Fatal("a refusal made erin an admin")
	}
	io, out, _ := streams("", map[string]string{"STATION_HUB_DATA": dir})
	if err := adminRun(ctx, &AdminOptions{IO: io, SetAdmin: setAdmin, Name: "erin"}); err != nil || out.String() != "erin is now an admin of the hub\n" || !isAdminIn(t, dir, "erin") {
		t.Errorf("user admin erin: %q, %v", out.String(), err)
	}
	io, out, _ = streams("", map[string]string{"STATION_HUB_DATA": dir})
	if err := adminRun(ctx, &AdminOptions{IO: io, SetAdmin: setAdmin, Name: "erin", Revoke: true, JSON: true}); err != nil || isAdminIn(t, dir, "erin") {
		t.Fatalf("user admin erin --revoke: %v", err)
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res["account"] != "erin" || res["admin"] != false {
		t.Errorf("user admin --revoke --json: %s (%v)", out.String(), err)
	}
}

// TestPrintersEscape feeds the hostile text through every field of what
// the hub commands print: a hub's answers (identities, keys, key lists)
// and the relay's lines.
func TestPrintersEscape(t *testing.T) {
	h := clitest.Hostile
	var buf bytes.Buffer
	check := func(what string, r cmdutil.Texter) {
		t.Helper()
		buf.Reset()
		if err := r.Text(&buf); err != nil {
			t.Fatal(err)
		}
		clitest.CheckPrinted(t, what, buf.String())
		buf.Reset()
		if err := cmdutil.WriteJSON(&buf, r); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if c := clitest.RawControl(buf.String()); c != "" || !json.Valid(buf.Bytes()) {
			t.Errorf("%s --json: %s in %q", what, c, buf.String())
		}
	}
	now := time.Now()
	k := hubapi.Key{ID: h, Account: h, PublicKey: h, CreatedAt: now, RevokedAt: &now}
	check("whoami", IdentityResult{Hub: h, Account: h})
	check("login", LoginResult{Hub: h, Account: h})
	check("key create", KeyCreateResult{Key: k, File: h, Replaced: h, Backup: h})
	check("key list", KeyListResult{Account: h, Keys: []hubapi.Key{k, {ID: h}}, File: h, LocalID: h})
	check("key list, not registered", KeyListResult{Account: h, Keys: []hubapi.Key{k}, File: h, LocalID: "other"})
	check("key list, no keys", KeyListResult{Account: h, File: h, LocalError: h})
	check("user token", TokenResult{Account: h, ID: h, Label: h, Secret: h})
	check("user admin", AdminResult{Account: h, Admin: true})
	check("user admin --revoke", AdminResult{Account: h})

	for _, e := range []hubsync.RelayEvent{
		{Kind: hubsync.RelayFollowing, Hub: h, Account: h},
		{Kind: hubsync.RelayApplied, Hub: h, Team: h, Revision: 3, Installed: []string{h, h}, Failed: []string{h}},
		{Kind: hubsync.RelayPending, Hub: h, Team: h, Module: h, Version: h, FromVersion: h, Asks: []string{h, h}},
		{Kind: hubsync.RelayStopped, Hub: h, Reason: h},
		{Kind: hubsync.RelayStopped, Reason: h},
		{Kind: hubsync.RelayAdvisories, Hub: h, Advisories: 1, Affected: []string{h, h}},
		{Kind: hubsync.RelayEventKind(h)},
	} {
		buf.Reset()
		RelayPrinter(&buf)(e)
		clitest.CheckPrinted(t, "relay line "+string(e.Kind), buf.String())
		if strings.Count(buf.String(), "\n") != 1 {
			t.Errorf("relay line %q is not one line: %q", e.Kind, buf.String())
		}
	}
}

func TestRelayLines(t *testing.T) {
	for _, tc := range []struct {
		e    hubsync.RelayEvent
		want string
	}{
		{hubsync.RelayEvent{Kind: hubsync.RelayFollowing, Hub: "https://hub.example", Account: "bob"}, "following the hub relay at https://hub.example as bob"},
		{hubsync.RelayEvent{Kind: hubsync.RelayApplied, Team: "acme", Revision: 2}, "team acme: applied lockfile revision 2 from the hub (nothing to change)"},
		{hubsync.RelayEvent{Kind: hubsync.RelayApplied, Team: "acme", Revision: 3, Installed: []string{"alice/hello@1.0.0", "alice/x@2.0.0"}, Failed: []string{"alice/y@1.0.0: boom"}},
			"team acme: applied lockfile revision 3 from the hub (installed alice/hello@1.0.0, alice/x@2.0.0; FAILED alice/y@1.0.0: boom)"},
		{hubsync.RelayEvent{Kind: hubsync.RelayPending, Team: "acme", Revision: 4, Module: "alice/hello", Version: "1.1.0", FromVersion: "1.0.0", Asks: []string{"may now connect to api.stripe.com"}},
			"team acme: alice/hello@1.1.0 waits for your approval (revision 4; 1.0.0 keeps running): it may now connect to api.stripe.com; review: station team status acme, approve: station team sync acme"},
		{hubsync.RelayEvent{Kind: hubsync.RelayPending, Team: "acme", Revision: 4, Module: "alice/new", Version: "1.0.0", Asks: []string{"may run any program"}},
			"team acme: alice/new@1.0.0 waits for your approval (revision 4; not installed): it may run any program; review: station team status acme, approve: station team sync acme"},
		{hubsync.RelayEvent{Kind: hubsync.RelayStopped, Hub: "https://hub.example", Reason: "the hub login changed"}, "stopped following the hub relay at https://hub.example: the hub login changed"},
		{hubsync.RelayEvent{Kind: hubsync.RelayStopped, Reason: "cannot follow the hub login: no token"}, "not following the hub relay: cannot follow the hub login: no token"},
		{hubsync.RelayEvent{Kind: hubsync.RelayAdvisories, Hub: "https://hub.example", Advisories: 1, Affected: []string{"alice/x@1.0.0: STATION-2026-0001 (critical), DOES NOT RUN"}},
			"advisories from https://hub.example: 1 advisories and 0 yanks applied; now alice/x@1.0.0: STATION-2026-0001 (critical), DOES NOT RUN; station advisories lists them"},
		{hubsync.RelayEvent{Kind: hubsync.RelayAdvisories, Hub: "https://hub.example", Yanks: 2}, "advisories from https://hub.example: 0 advisories and 2 yanks applied; no installed version is affected"},
	} {
		if got := relayLine(tc.e); got != tc.want {
			t.Errorf("relayLine(%+v)\n got %s\nwant %s", tc.e, got, tc.want)
		}
	}
}
