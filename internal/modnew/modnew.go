// Package modnew writes a new module directory: a manifest, one command, a
// test, a README, in Go, C or Rust, ready to build with station module
// build and with nothing fetched from the network (the Go SDK comes from
// the station's own proxy, gosdk; the C and Rust SDKs are copied in).
package modnew

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/station-dev/station/internal/gosdk"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

//go:embed templates
var templates embed.FS

// Langs are the languages New writes (wasmbuild's, which builds them), the
// default first. Each is a directory of templates.
var Langs = []string{wasmbuild.LangGo, wasmbuild.LangC, wasmbuild.LangRust}

// Options say what New writes.
type Options struct {
	Dir  string // created; must not exist, or be an empty directory
	Lang string // one of Langs; "" is Go
	ID   string // owner/slug; "" derives it (DefaultID)
}

// Result is what New wrote.
type Result struct {
	Dir   string   `json:"dir"`
	ID    string   `json:"id"`
	Lang  string   `json:"lang"`
	Files []string `json:"files"` // relative to Dir, slash-separated, sorted
}

// data is what the templates see.
type data struct {
	ID, Owner, Slug, Description string
	Lang, LangName, BuildNote    string
	SDKVersion, GoVersion        string
}

// New writes a module into o.Dir. It refuses a directory that exists and is
// not empty, and removes what it wrote when it fails.
func New(o Options) (res *Result, err error) {
	lang := o.Lang
	if lang == "" {
		lang = wasmbuild.LangGo
	}
	if !slices.Contains(Langs, lang) {
		return nil, fmt.Errorf("unknown language %q: choose one of %s", lang, strings.Join(Langs, ", "))
	}
	id := o.ID
	if id == "" {
		if id, err = DefaultID(o.Dir); err != nil {
			return nil, err
		}
	}
	if msg := manifest.CheckID(id); msg != "" {
		return nil, fmt.Errorf("module id %q %s; pass --id owner/slug", id, msg)
	}
	created, err := makeDir(o.Dir)
	if err != nil {
		return nil, err
	}
	var written []string
	defer func() {
		if err == nil {
			return
		}
		// Leave nothing half-made: the directory if New made it, else
		// the files it wrote into the empty one it was given.
		if created {
			os.RemoveAll(o.Dir)
			return
		}
		for _, f := range slices.Backward(written) {
			os.Remove(filepath.Join(o.Dir, filepath.FromSlash(f)))
		}
	}()
	owner, slug, _ := strings.Cut(id, "/")
	d := data{
		ID: id, Owner: owner, Slug: slug, Lang: lang,
		Description: "Greets whoever you name (a new module; say here what it does)",
		SDKVersion:  gosdk.Version,
	}
	switch lang {
	case wasmbuild.LangGo:
		d.LangName, d.BuildNote = "Go", "GOOS=wasip1 go build, with the Station Go SDK"
		if d.GoVersion, err = sdkGoVersion(); err != nil {
			return nil, err
		}
	case wasmbuild.LangC:
		d.LangName, d.BuildNote = "C", "clang --target=wasm32-wasi, with station.h/station.c"
	case wasmbuild.LangRust:
		d.LangName, d.BuildNote = "Rust", "rustc --target wasm32-wasi, with the station crate in station/"
	}
	write := func(name string, b []byte) error {
		p := filepath.Join(o.Dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
		written = append(written, name)
		return nil
	}
	for _, sub := range []string{"common", lang} {
		if err := fs.WalkDir(templates, "templates/"+sub, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"+sub+"/"), ".tmpl")
			if name == "gitignore" {
				name = ".gitignore"
			}
			b, err := render(p, d)
			if err != nil {
				return err
			}
			return write(name, b)
		}); err != nil {
			return nil, err
		}
	}
	switch lang {
	case wasmbuild.LangGo:
		gomod := fmt.Sprintf("module %s\n\ngo %s\n\nrequire %s %s\n", id, d.GoVersion, gosdk.ModulePath, gosdk.Version)
		if err := write("go.mod", []byte(gomod)); err != nil {
			return nil, err
		}
	case wasmbuild.LangC:
		// The C SDK is two files the module keeps (and may read).
		for _, name := range []string{"station.h", "station.c"} {
			b, err := gosdk.ReadFile("c/" + name)
			if err != nil {
				return nil, err
			}
			if err := write(name, b); err != nil {
				return nil, err
			}
		}
	case wasmbuild.LangRust:
		// The Rust SDK is a crate, kept in station/ (Cargo.toml names it).
		files, err := gosdk.CopyDir(wasmbuild.LangRust, filepath.Join(o.Dir, "station"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			written = append(written, path.Join("station", f))
		}
	}
	files := slices.Clone(written)
	slices.Sort(files)
	return &Result{Dir: o.Dir, ID: id, Lang: lang, Files: files}, nil
}

// render executes the template at p.
func render(p string, d data) ([]byte, error) {
	src, err := templates.ReadFile(p)
	if err != nil {
		return nil, err
	}
	t, err := template.New(path.Base(p)).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// makeDir creates dir, or accepts an empty directory; it reports whether it
// created it.
func makeDir(dir string) (bool, error) {
	if dir == "" {
		return false, errors.New("no directory given")
	}
	err := os.Mkdir(dir, 0o755)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, err
	}
	entries, rerr := os.ReadDir(dir)
	if rerr != nil {
		return false, fmt.Errorf("%s exists and is not a directory", dir)
	}
	if len(entries) > 0 {
		return false, fmt.Errorf("%s is not empty: give a new directory (nothing was written)", dir)
	}
	return false, nil
}

// DefaultID derives a module id from the directory's name and the user's
// login: "ada/hello" for ./hello. The slug is the name lower-cased, with
// every run of other characters a hyphen.
func DefaultID(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	slug := slugify(filepath.Base(abs))
	owner := slugify(os.Getenv("USER"))
	if owner == "" {
		owner = "me"
	}
	if slug == "" {
		return "", fmt.Errorf("cannot make a module id from %q: pass --id owner/slug", filepath.Base(abs))
	}
	return owner + "/" + slug, nil
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	out := b.String()
	if len(out) > 39 {
		out = strings.Trim(out[:39], "-")
	}
	return out
}

// sdkGoVersion is the go directive of the SDK's go.mod: the oldest Go a
// module with it builds with.
func sdkGoVersion() (string, error) {
	mod, err := gosdk.GoMod()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(mod)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("the SDK's go.mod has no go directive")
}
