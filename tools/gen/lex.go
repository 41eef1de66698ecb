package main

import (
	"fmt"
	"strings"
)

// tokKind classifies a C token.
type tokKind int

const (
	tIdent  tokKind = iota // identifier or keyword
	tNumber                // preprocessing number: 0x1F, 13000, 1u, 201112L
	tString                // "..." or '...'
	tPunct                 // operator or punctuator
)

// token is one C token and where it came from.
type token struct {
	kind  tokKind
	text  string
	pos   pos
	space bool // white space or a comment came before it on its line
}

// pos is a source position for error messages.
type pos struct {
	file string
	line int
}

func (p pos) String() string { return fmt.Sprintf("%s:%d", p.file, p.line) }

// puncts lists the multi-character punctuators the lexer knows, longest first.
var puncts = []string{"...", "<<=", ">>=", "##", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="}

// directive reports whether the logical line l is a preprocessing
// directive and returns its name.
func directive(l []token) (string, bool) {
	if len(l) == 0 || l[0].text != "#" || l[0].kind != tPunct {
		return "", false
	}
	if len(l) == 1 {
		return "", true // null directive
	}
	return l[1].text, true
}

// lexLines splits src into logical lines of tokens. Backslash-newline joins
// lines; comments become white space. Lines without tokens are dropped.
func lexLines(file, src string) ([][]token, error) {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	var (
		lines [][]token
		cur   []token
		ln    = 1
		space bool // white space seen since the last token
	)
	add := func(kind tokKind, text string) {
		cur = append(cur, token{kind, text, pos{file, ln}, space})
		space = false
	}
	flush := func() {
		if len(cur) > 0 {
			lines = append(lines, cur)
		}
		cur = nil
		space = false
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
			ln++
			space = true
		case c == '\n':
			i++
			ln++
			flush()
		case c == ' ' || c == '\t' || c == '\f' || c == '\v':
			i++
			space = true
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			space = true
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: unterminated comment", file, ln)
			}
			ln += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
			space = true
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			add(tIdent, src[i:j])
			i = j
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			j := i
			for j < len(src) && (isIdentChar(src[j]) || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E' || src[j-1] == 'p' || src[j-1] == 'P')) {
				j++
			}
			add(tNumber, src[i:j])
			i = j
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) || src[j] != c {
				return nil, fmt.Errorf("%s:%d: unterminated literal", file, ln)
			}
			add(tString, src[i:j+1])
			i = j + 1
		default:
			text := string(c)
			for _, p := range puncts {
				if strings.HasPrefix(src[i:], p) {
					text = p
					break
				}
			}
			add(tPunct, text)
			i += len(text)
		}
	}
	flush()
	return lines, nil
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }
func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
