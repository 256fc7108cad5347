package shttp

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/station-dev/station/sdk/abi"
	"github.com/station-dev/station/sdk/internal/jsonscan"
)

// The request and response documents without encoding/json.
//
// Inside the station every loop iteration and function call of a Go guest
// costs an exit to the host (wazero checks the call's deadline there), and
// encoding/json's reflection and byte-by-byte scanner made up more than half
// of a module's GET. These two functions handle the documents' fixed shapes
// directly. appendRequest writes a document that decodes to exactly what
// json.Marshal's would; parseResponse, with the scanner package sdk's fast
// path uses too (sdk/internal/jsonscan), accepts only what it decodes
// exactly as json.Unmarshal would and otherwise reports false, and the
// caller uses encoding/json. TestResponseDoc and FuzzResponseDoc compare the
// two.

// appendRequest appends the JSON of doc to b. It reports false when a string
// is not valid UTF-8 (json.Marshal would change it; let it).
func appendRequest(b []byte, doc *abi.HTTPRequest) ([]byte, bool) {
	var ok bool
	b = append(b, `{"method":`...)
	if b, ok = appendString(b, doc.Method); !ok {
		return b, false
	}
	b = append(b, `,"url":`...)
	if b, ok = appendString(b, doc.URL); !ok {
		return b, false
	}
	if len(doc.Headers) > 0 {
		b = append(b, `,"headers":{`...)
		first := true
		for k, vs := range doc.Headers {
			if !first {
				b = append(b, ',')
			}
			first = false
			if b, ok = appendString(b, k); !ok {
				return b, false
			}
			b = append(b, ':')
			if vs == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for i, v := range vs {
				if i > 0 {
					b = append(b, ',')
				}
				if b, ok = appendString(b, v); !ok {
					return b, false
				}
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if len(doc.Body) > 0 {
		b = append(b, `,"body":"`...)
		b = base64.StdEncoding.AppendEncode(b, doc.Body)
		b = append(b, '"')
	}
	return append(b, '}'), true
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string.
func appendString(b []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return b, false
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// parseResponse decodes the station's response document into r. It reports
// false when json.Unmarshal must decode doc instead (r may then be partly
// written).
func parseResponse(doc []byte, r *abi.HTTPResponse) bool {
	p := parser{jsonscan.New(doc)}
	p.Space()
	if !p.Byte('{') {
		return false
	}
	var seen [4]bool
	p.Space()
	if p.Byte('}') {
		return p.End()
	}
	for {
		key, ok := p.Str()
		if !ok {
			return false
		}
		p.Space()
		if !p.Byte(':') {
			return false
		}
		p.Space()
		var field int
		switch string(key) {
		case "status":
			field = 0
			tok, integer, ok := p.Number()
			if !ok || !integer {
				return false
			}
			n, err := strconv.ParseInt(tok, 10, strconv.IntSize)
			if err != nil {
				return false
			}
			r.Status = int(n)
		case "headers":
			field = 1
			if p.Null() {
				break
			}
			if r.Headers, ok = p.headers(); !ok {
				return false
			}
		case "body":
			field = 2
			if p.Null() {
				break
			}
			s, ok := p.Str()
			if !ok {
				return false
			}
			body := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
			n, err := base64.StdEncoding.Decode(body, s)
			if err != nil {
				return false
			}
			r.Body = body[:n]
		case "url":
			field = 3
			if p.Null() {
				break
			}
			s, ok := p.Str()
			if !ok {
				return false
			}
			r.URL = string(s)
		default:
			return false // json.Unmarshal would match case-insensitively or skip it
		}
		if seen[field] {
			return false // json.Unmarshal merges a repeated map
		}
		seen[field] = true
		p.Space()
		if p.Byte('}') {
			return p.End()
		}
		if !p.Byte(',') {
			return false
		}
		p.Space()
	}
}

// parser reads the response document.
type parser struct {
	jsonscan.Scanner
}

// headers scans an object of string arrays.
func (p *parser) headers() (map[string][]string, bool) {
	if !p.Byte('{') {
		return nil, false
	}
	h := map[string][]string{}
	p.Space()
	if p.Byte('}') {
		return h, true
	}
	for {
		k, ok := p.Str()
		if !ok {
			return nil, false
		}
		p.Space()
		if !p.Byte(':') {
			return nil, false
		}
		p.Space()
		if _, dup := h[string(k)]; dup {
			return nil, false
		}
		var vs []string
		if !p.Null() {
			if !p.Byte('[') {
				return nil, false
			}
			vs = []string{}
			p.Space()
			if !p.Byte(']') {
				for {
					v, ok := p.Str()
					if !ok {
						return nil, false
					}
					vs = append(vs, string(v))
					p.Space()
					if p.Byte(']') {
						break
					}
					if !p.Byte(',') {
						return nil, false
					}
					p.Space()
				}
			}
		}
		h[string(k)] = vs
		p.Space()
		if p.Byte('}') {
			return h, true
		}
		if !p.Byte(',') {
			return nil, false
		}
		p.Space()
	}
}
