package store

import (
	"fmt"
	"strings"
)

// sqliteStatement prepares a user's query for SQLite: it checks that the text holds
// exactly one statement (a trailing ";" and comments are fine) and writes PostgreSQL's
// placeholders $1, $2, ... as SQLite's ?1, ?2, ..., so that $N binds the Nth argument on
// both databases (SQLite reads $1 as a parameter named "$1", numbered in the order of
// first use).
//
// Why a scanner: go-sqlite3 runs every statement of a string and returns the last one's
// rows, and it does not expose the tail that sqlite3_prepare_v2 leaves, so the store
// cannot ask SQLite where the first statement ends. A statement ends at a ";" outside a
// string literal ('...'), a quoted identifier ("...", `...`, [...]) and a comment (-- to
// the end of the line, /* ... */); that is all this reads. The query then runs as one
// prepared statement, which runs its first statement only, so a text this reads wrong can
// never run a second statement.
func sqliteStatement(query string) (string, error) {
	var b strings.Builder
	b.Grow(len(query))
	statements, inStatement := 0, false
	token := func() {
		if !inStatement {
			inStatement = true
			statements++
		}
	}
	for i := 0; i < len(query); {
		c := query[i]
		next := byte(0)
		if i+1 < len(query) {
			next = query[i+1]
		}
		end := i + 1
		switch {
		case c == '-' && next == '-':
			end = len(query)
			if j := strings.IndexByte(query[i:], '\n'); j >= 0 {
				end = i + j + 1
			}
		case c == '/' && next == '*':
			end = len(query)
			if j := strings.Index(query[i+2:], "*/"); j >= 0 {
				end = i + 2 + j + 2
			}
		case c == '\'' || c == '"' || c == '`':
			token()
			end = closingQuote(query, i)
		case c == '[':
			token()
			end = len(query)
			if j := strings.IndexByte(query[i:], ']'); j >= 0 {
				end = i + j + 1
			}
		case c == ';':
			inStatement = false
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		case c == '$' && isDigit(next) && (i == 0 || !isIdentByte(query[i-1])):
			token()
			end = i + 1
			for end < len(query) && isDigit(query[end]) {
				end++
			}
			if end == len(query) || !isIdentByte(query[end]) {
				b.WriteByte('?')
				b.WriteString(query[i+1 : end])
				i = end
				continue
			}
			end = i + 1 // $1abc is a parameter of its own name: left as written
		default:
			token()
		}
		b.WriteString(query[i:end])
		i = end
	}
	switch {
	case statements == 0:
		return "", fmt.Errorf("%w: the query holds no statement", ErrBadQuery)
	case statements > 1:
		return "", fmt.Errorf("%w: %s", ErrBadQuery, severalStatements)
	}
	return b.String(), nil
}

// severalStatements is what a query of several statements is told, on either database.
const severalStatements = "the query holds several statements; run one at a time"

// closingQuote returns the index just past the quote that closes the one at query[open]
// (a doubled quote inside is an escaped one), or len(query) when none does.
func closingQuote(query string, open int) int {
	q := query[open]
	for i := open + 1; i < len(query); i++ {
		if query[i] != q {
			continue
		}
		if i+1 < len(query) && query[i+1] == q {
			i++
			continue
		}
		return i + 1
	}
	return len(query)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdentByte reports whether c may continue an SQLite identifier or parameter name
// (letters, digits, _, $ and every byte of a multi-byte UTF-8 character).
func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') || c >= 0x80
}
