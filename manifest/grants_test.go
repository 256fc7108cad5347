package manifest

import (
	"strings"
	"testing"
)

// attackHome is the operator's home directory the grant tests assume.
const attackHome = "/srv/ada"

// TestHomeGlobsNeedTheOperator (issue 11, defect 7): a glob that reaches a
// dot-directory or dotfile of a home directory — or the directories where
// shells, language runtimes and desktops find code — needs the operator's
// grant, or is refused outright, however it is spelt: case, "." and ".."
// segments, braces, classes, wildcards that could match such a path, or an
// absolute path to a home. Before, ~/.config/git/**, ~/.kube/**, ~/.docker/**
// and many more were accepted on a module's word alone.
func TestHomeGlobsNeedTheOperator(t *testing.T) {
	attacks := []string{
		// What issue 11 found accepted.
		"~/.config/git/**",
		"~/.config/git/config",
		"~/.local/lib/python3.*/site-packages/**",
		"~/.local/lib/python3.12/site-packages/evil.pth",
		"~/.config/environment.d/**",
		"~/.bashrc.d/**",
		"~/.config/fish/**",
		"~/.config/fish/conf.d/x.fish",
		"~/.kube/**",
		"~/.kube/config",
		"~/.docker/**",
		"~/.docker/config.json",
		// The class, not a list: any dot-directory or dotfile.
		"~/.aws/credentials",
		"~/.azure/**",
		"~/.config/gcloud/**",
		"~/.netrc",
		"~/.git-credentials",
		"~/.gitconfig",
		"~/.npmrc",
		"~/.pypirc",
		"~/.cargo/bin/**",
		"~/.rustup/**",
		"~/.npm-global/bin/x",
		"~/.vim/**",
		"~/.emacs.d/init.el",
		"~/.config/nvim/init.lua",
		"~/.vscode/extensions/**",
		"~/.mozilla/firefox/**",
		"~/.password-store/**",
		"~/.zshrc",
		"~/.zshenv",
		"~/.x/y",
		"~/..x/y",
		"~/.../y",
		// Case variants.
		"~/.SSH/**",
		"~/.Kube/config",
		"~/.CONFIG/git/**",
		"~/.Config/Systemd/user/x.service",
		// Spellings that could reach ~/.ssh.
		"~/./.ssh",
		"~/./.ssh/**",
		"~/x/../.ssh",
		"~/x/../.ssh/**",
		"~//.ssh/**",
		"~/.ssh/",
		"~/.ssh/./authorized_keys",
		"~/{.ssh,x}/**",
		"~/{x,.ssh}/**",
		"~/{.ssh}/authorized_keys",
		"~/[.]ssh/**",
		"~/[.]*/**",
		"~/[!a-z]ssh/**",
		"~/?ssh/**",
		"~/.*",
		"~/.*/**",
		"~/.s*/**",
		"~/*/**",
		"~/*",
		"~/**",
		"~/**/.ssh/**",
		"~/*/.ssh/**",
		`~/\.ssh/**`,
		// Code locations without a dot.
		"~/bin/**",
		"~/BIN/x",
		"~/go/bin/**",
		"~/go/pkg/mod/**",
		"~/node_modules/**",
		"~/perl5/lib/**",
		"~/Library/**",
		"~/library/LaunchAgents/x.plist",
		"~/Library/Application Support/Code/User/settings.json",
		"~/Library/Python/3.12/lib/python/site-packages/**",
		"~/Applications/**",
		"~/AppData/Roaming/**",
		"~/snap/**",
		// A home written as an absolute path.
		"/home/dave/.ssh/**",
		"/home/dave/.config/git/**",
		"/home/dave/.bashrc",
		"/HOME/dave/.kube/**",
		"/home/dave/bin/x",
		"/home/dave/./.ssh/x",
		"/home/x/../dave/.ssh/x",
		"/home/*/.ssh/**",
		"/home/{dave,x}/.ssh/**",
		"/home/dave/{.ssh,x}/**",
		"/home/dave/*/**",
		"/Users/dave/.zshrc",
		"/Users/dave/Library/**",
		"/users/dave/.config/**",
		"/root/.ssh/**",
		"/root/.bashrc",
		// The operator's own home, wherever it is.
		attackHome + "/.ssh/**",
		attackHome + "/.kube/config",
		"/SRV/Ada/.bashrc.d/x",
		attackHome + "/bin/x",
		attackHome + "/**",
		attackHome + "/*.txt",
		attackHome + "/{.ssh,x}/**",
	}
	for _, glob := range attacks {
		for _, field := range []string{"filesystem_writes", "filesystem_reads"} {
			doc := head + "requires:\n  " + field + ":\n    - " + yamlQuote(glob) + "\n"
			_, err := ParseWith(FileName, []byte(doc), Options{Home: attackHome})
			if err == nil {
				t.Errorf("%s %q accepted without the operator's grant", field, glob)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, "operator grant") && !strings.Contains(msg, "refused") &&
				!strings.Contains(msg, "covers") && !strings.Contains(msg, "must") {
				t.Errorf("%s %q: %v, want a refusal that says why", field, glob, err)
			}
		}
	}
}

// The dot-directory class says why, in the refusal and in the reason an
// approval shows once the operator grants the glob; the grant is the glob
// exactly as written.
func TestHomeGlobGrant(t *testing.T) {
	tests := []struct {
		glob string
		want string // in the refusal and in GrantReason
	}{
		{"~/.config/git/**", "~/.config is a dot-directory of the home directory"},
		{"~/.kube/config", "~/.kube is a dot-directory"},
		{"~/.ssh/**", "~/.ssh"},
		{"~/.bashrc", "dotfile"},
		{"~/bin/**", "~/bin holds programs your shell finds on its PATH"},
		{"~/Library/Preferences/x.plist", "~/Library holds macOS"},
		{"/home/dave/.docker/**", "/home/dave/.docker is a dot-directory"},
		{attackHome + "/.kube/**", attackHome + "/.kube is a dot-directory"},
		{"/var/lib/reports/**", "system directory /var"},
	}
	for _, tt := range tests {
		doc := head + "requires:\n  filesystem_writes:\n    - " + yamlQuote(tt.glob) + "\n"
		_, err := ParseWith(FileName, []byte(doc), Options{Home: attackHome})
		if err == nil {
			t.Errorf("%q accepted without a grant", tt.glob)
		}
		reason := GrantReason(tt.glob, attackHome)
		if !strings.Contains(reason, tt.want) {
			t.Errorf("GrantReason(%q) = %q, want it to contain %q", tt.glob, reason, tt.want)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "filesystem.grant") {
			t.Errorf("%q: refusal %v, want the reason %q and the grant to ask for", tt.glob, err, tt.want)
		}
		m, err := ParseWith(FileName, []byte(doc), Options{Home: attackHome, GrantedGlobs: []string{tt.glob}})
		if err != nil {
			t.Errorf("%q with the operator's grant: %v", tt.glob, err)
		} else if got := m.Requires.FilesystemWrites; len(got) != 1 || got[0] != tt.glob {
			t.Errorf("%q with the operator's grant: writes %q", tt.glob, got)
		}
		// A grant is for the glob as written, not for what looks alike.
		other := strings.Replace(tt.glob, "/", "//", 1)
		if _, err := ParseWith(FileName, []byte(strings.Replace(doc, yamlQuote(tt.glob), yamlQuote(other), 1)), Options{Home: attackHome, GrantedGlobs: []string{tt.glob}}); err == nil {
			t.Errorf("the grant of %q accepted %q", tt.glob, other)
		}
	}
}

// Ordinary globs stay ordinary: no grant, no reason.
func TestOrdinaryHomeGlobs(t *testing.T) {
	for _, glob := range []string{
		"~/reports/**",
		"~/Documents/out/*.csv",
		"~/notes.txt",
		"~/reports/2026/{q1,q2}/*.csv",
		"~/reports/.cache/**", // a dot-directory deeper down is the granted tree's own
		"~/go-projects/out/**",
		"~/binaries/**",
		"~/Desktop/out.txt",
		"/home/dave/reports/**",
		"/srv/reports/**",
		attackHome + "/reports/**",
		"/srv/adam/.x/**", // not the operator's home
	} {
		doc := head + "requires:\n  filesystem_writes:\n    - " + yamlQuote(glob) + "\n  filesystem_reads:\n    - " + yamlQuote(glob) + "\n"
		if _, err := ParseWith(FileName, []byte(doc), Options{Home: attackHome}); err != nil {
			t.Errorf("%q: %v", glob, err)
		}
		if r := GrantReason(glob, attackHome); r != "" {
			t.Errorf("GrantReason(%q) = %q, want none", glob, r)
		}
	}
}

// TestBroadNetworkNeedsTheOperator (issue 11, defect 7): a wildcard under a
// shared-tenant domain — any customer of the service can hold a name below
// it — is refused with the reason unless the operator granted the same rule
// in network.grant; narrow entries need nothing.
func TestBroadNetworkNeedsTheOperator(t *testing.T) {
	tests := []struct {
		entry   string
		granted []string
		ok      bool
	}{
		{"*.amazonaws.com", nil, false},
		{"*.AmazonAWS.com.", nil, false},
		{"http://*.amazonaws.com:8080", nil, false},
		{"*.sqs.amazonaws.com", nil, false},
		{"*.mybucket.s3.amazonaws.com", nil, false},
		{"*.windows.net", nil, false},
		{"*.x.azurewebsites.net", nil, false},
		{"*.dave.github.io", nil, false},
		{"*.x.herokuapp.com", nil, false},
		{"*.loca.lt", nil, false},
		{"*.run.app", nil, false},               // refused outright: every name below is a public suffix
		{"*.compute.amazonaws.com", nil, false}, // likewise
		{"*.github.io", nil, false},             // a public suffix itself
		{"*.amazonaws.com", []string{"*.amazonaws.com"}, true},
		{"*.AmazonAWS.com.", []string{"*.amazonaws.com"}, true}, // the same rule
		{"*.amazonaws.com", []string{"https://*.amazonaws.com:443"}, true},
		{"http://*.amazonaws.com:8080", []string{"*.amazonaws.com"}, false}, // another scheme and port
		{"*.sqs.amazonaws.com", []string{"*.amazonaws.com"}, false},         // another rule
		{"*.run.app", []string{"*.run.app"}, false},                         // no grant allows it
		{"*.stripe.com", nil, true},
		{"api.stripe.com", nil, true},
		{"mybucket.s3.amazonaws.com", nil, true},
	}
	for _, tt := range tests {
		doc := head + "requires:\n  network:\n    allow:\n      - " + yamlQuote(tt.entry) + "\n"
		_, err := ParseWith(FileName, []byte(doc), Options{GrantedNetwork: tt.granted})
		if tt.ok {
			if err != nil {
				t.Errorf("%q granted %q: %v", tt.entry, tt.granted, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q granted %q: accepted", tt.entry, tt.granted)
			continue
		}
		errs := errorsOf(t, err)
		if len(errs) != 1 || errs[0].Entry != tt.entry || errs[0].Field != "requires.network.allow" {
			t.Errorf("%q: %v, want one error naming the entry", tt.entry, err)
		}
	}
	_, err := Parse(FileName, []byte(head+"requires:\n  network:\n    allow: [\"*.amazonaws.com\"]\n"))
	if err == nil || !strings.Contains(err.Error(), "whoever holds one receives what the module sends") || !strings.Contains(err.Error(), "network.grant") {
		t.Errorf("*.amazonaws.com: %v, want the reason and the grant to ask for", err)
	}
}

// A home deeper than the top-level rule reaches (/data/users/ada): a
// wildcard on the way to it can match it, so it is refused like a glob over
// the whole home, however the wildcard is written; a sibling tree is not.
func TestWildcardAboveTheOperatorsHome(t *testing.T) {
	const home = "/data/users/ada"
	for _, glob := range []string{
		"/data/users/*/.ssh/**",
		"/data/users/**",
		"/data/users/*",
		"/data/users/ad?/.kube/config",
		"/data/users/[a]da/.ssh/**",
		"/data/users/{ada,x}/.ssh/**",
		"/data/users/ada{,/.ssh}/**",
		"/DATA/Users/*/bin/x",
	} {
		for _, field := range []string{"filesystem_writes", "filesystem_reads"} {
			doc := head + "requires:\n  " + field + ":\n    - " + yamlQuote(glob) + "\n"
			_, err := ParseWith(FileName, []byte(doc), Options{Home: home})
			if err == nil || !strings.Contains(err.Error(), "can match your home directory "+home) {
				t.Errorf("%s %q with a home of %s: %v, want refused as matching the home", field, glob, home, err)
			}
		}
		if r := GrantReason(glob, home); !strings.Contains(r, "your whole home directory") {
			t.Errorf("GrantReason(%q, %q) = %q", glob, home, r)
		}
		doc := head + "requires:\n  filesystem_writes:\n    - " + yamlQuote(glob) + "\n"
		if _, err := ParseWith(FileName, []byte(doc), Options{Home: home, GrantedGlobs: []string{glob}}); err != nil {
			t.Errorf("%q with the operator's grant: %v", glob, err)
		}
	}
	for _, glob := range []string{"/data/users/ada/reports/**", "/data/users2/**", "/data/shared/*.csv"} {
		doc := head + "requires:\n  filesystem_writes:\n    - " + yamlQuote(glob) + "\n"
		if _, err := ParseWith(FileName, []byte(doc), Options{Home: home}); err != nil {
			t.Errorf("%q with a home of %s: %v", glob, home, err)
		}
	}
}

// TestGlobsThroughSymbolicLinks: a glob is judged as the path it leads to.
// A write root that is a symbolic link into the home's dot-directories, or
// a home reached through a link, needs the grant the path it leads to needs.
func TestGlobsThroughSymbolicLinks(t *testing.T) {
	links := map[string]string{
		"/srv/link":       "/home/ada/.ssh",
		"/srv/cfg":        "/home/ada/.config",
		"/srv/ada":        "/data/ada", // the operator's home is a link
		"/srv/plain":      "/data/plain",
		"/mnt/etc":        "/etc",
		"/home/ada/notes": "/home/ada/.local/share/notes",
	}
	resolve := func(p string) string {
		for from, to := range links {
			if p == from {
				return to
			}
			if rest, ok := strings.CutPrefix(p, from+"/"); ok {
				return to + "/" + rest
			}
		}
		return p
	}
	cases := []struct {
		home, glob, want string // want: "" accepted, else a substring of the error
	}{
		{"/home/ada", "/srv/link/**", "leads through a symbolic link to /home/ada/.ssh"},
		{"/home/ada", "/srv/link/id_ed25519", "leads through a symbolic link to /home/ada/.ssh/id_ed25519"},
		{"/home/ada", "/srv/cfg/git/*.conf", "dot-directory"},
		{"/home/ada", "/mnt/etc/**", "system directory /etc"},
		{"/home/ada", "~/notes/**", "leads through a symbolic link to /home/ada/.local/share/notes"},
		{"/srv/ada", "/data/ada/.ssh/**", "is inside your home directory /srv/ada, which is /data/ada"},
		{"/srv/ada", "/data/ada/reports/**", ""},
		{"/home/ada", "/srv/plain/out/**", ""},
		{"/home/ada", "~/reports/**", ""},
	}
	for _, c := range cases {
		for _, field := range []string{"filesystem_writes", "filesystem_reads"} {
			doc := head + "requires:\n  " + field + ":\n    - " + yamlQuote(c.glob) + "\n"
			_, err := ParseWith(FileName, []byte(doc), Options{Home: c.home, Resolve: resolve})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s %q (home %s): %v, want accepted", field, c.glob, c.home, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s %q (home %s): %v, want an error containing %q", field, c.glob, c.home, err, c.want)
			}
		}
		if c.want != "" {
			doc := head + "requires:\n  filesystem_writes:\n    - " + yamlQuote(c.glob) + "\n"
			if _, err := ParseWith(FileName, []byte(doc), Options{Home: c.home, Resolve: resolve, GrantedGlobs: []string{c.glob}}); err != nil {
				t.Errorf("%q with the operator's grant: %v", c.glob, err)
			}
		}
	}
}
