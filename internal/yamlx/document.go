package yamlx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Document parses data as exactly one YAML document and returns its
// document node. It returns nil and true when data holds no document at all
// (it is empty or only comments), and nil and false after recording a
// syntax error or a second document.
func (d *Decoder) Document(data []byte) (doc *yaml.Node, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first yaml.Node
	if err := safeDecode(dec, &first); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		d.syntaxError(err, data)
		return nil, false
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntaxError(err, data)
		return nil, false
	default:
		d.Addf(&extra, "", "%s is one YAML document; found a second one", d.style.Doc)
		return nil, false
	}
	return &first, true
}

// Root returns the one value of a document node, or nil when doc is nil or
// not a document with one value.
func Root(doc *yaml.Node) *yaml.Node {
	if doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	return doc.Content[0]
}

// safeDecode runs dec.Decode, turning a panic inside the YAML library into
// an error: the files are untrusted input and must never crash the station.
func safeDecode(dec *yaml.Decoder, v *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: malformed document (%v)", r)
		}
	}()
	return dec.Decode(v)
}

// yamlLine finds the line number in a YAML library error message.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// syntaxError records an error of the YAML library at the line it names.
func (d *Decoder) syntaxError(err error, data []byte) {
	msg := err.Error()
	var line int
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if d.style.Syntax != nil {
		var text []byte
		if lines := bytes.Split(data, []byte("\n")); line > 0 && line <= len(lines) {
			text = lines[line-1]
		}
		msg = d.style.Syntax(msg, text)
	}
	d.Report(Problem{Line: line, Msg: msg})
}

// NoAliases records every anchor and alias under n and reports whether
// there were none: they make the decoded structure differ from what a
// reader sees.
func (d *Decoder) NoAliases(n *yaml.Node) bool {
	ok := true
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch {
		case n.Kind == yaml.AliasNode:
			d.Addf(n, "", "aliases (*%s) are not allowed in %s", d.name(n.Value), d.style.Doc)
			ok = false
		case n.Anchor != "":
			d.Addf(n, "", "anchors (&%s) are not allowed in %s", d.name(n.Anchor), d.style.Doc)
			ok = false
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return ok
}
