package textgen

import "slices"

// The dummy tokenizer of the reference simulator: one token per match of
//
//	({|}|:|,|-|\.|\?|!|;|@|#|\$|%|\^|&|\*|\(|\)|\+|-|_|~|/|\\|>|<|\[|\]|=|"|'|\w+)(\s*)
//
// (leftmost-first), with \w and \s in their ASCII meaning, and token id
// FNV-32a of the matched text. It is written out by hand because it runs
// on every request and a regexp would dominate the request's CPU time.

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

var punctTable = func() (t [256]bool) {
	for _, c := range []byte("{}:,-.?!;@#$%^&*()+_~/\\><[]=\"'") {
		t[c] = true
	}
	return t
}()

// nextToken returns the bounds of the first token at or after i, or
// start == len(s) when there is none.
func nextToken(s string, i int) (start, end int) {
	for i < len(s) {
		c := s[i]
		if punctTable[c] {
			end = i + 1
			break
		}
		if isWordByte(c) {
			end = i + 1
			for end < len(s) && isWordByte(s[end]) {
				end++
			}
			break
		}
		i++
	}
	if i >= len(s) {
		return len(s), len(s)
	}
	for end < len(s) && isSpaceByte(s[end]) {
		end++
	}
	return i, end
}

// CountTokens returns the number of dummy tokens in s.
func CountTokens(s string) int {
	n := 0
	for i := 0; ; {
		st, en := nextToken(s, i)
		if st == len(s) {
			return n
		}
		n++
		i = en
	}
}

// AppendTokens appends the token strings of s (substrings, no copies).
func AppendTokens(dst []string, s string) []string {
	for i := 0; ; {
		st, en := nextToken(s, i)
		if st == len(s) {
			return dst
		}
		dst = append(dst, s[st:en])
		i = en
	}
}

// TokenID is the dummy tokenizer's id of a token: FNV-32a of its text.
func TokenID(tok string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(tok); i++ {
		h ^= uint32(tok[i])
		h *= 16777619
	}
	return h
}

// AppendTokenIDs appends the ids of the tokens of s.
func AppendTokenIDs(dst []uint32, s string) []uint32 {
	// A token is a word and its spaces or one punctuation mark: about one per four bytes of
	// English, so a fresh buffer is allocated once instead of at every doubling.
	dst = slices.Grow(dst, len(s)/4)
	for i := 0; ; {
		st, en := nextToken(s, i)
		if st == len(s) {
			return dst
		}
		dst = append(dst, TokenID(s[st:en]))
		i = en
	}
}

// Tokenizer turns prompt text into token ids: what prompt lengths, the context window, KV
// block hashes, dataset keys and /tokenize count with. The dummy tokenizer above is the
// default; the command can load a Hugging Face tokenizer.json instead (internal/hftokenizer).
// Generated text is made of preset tokens either way, each one token.
type Tokenizer interface {
	// AppendIDs appends the ids of the tokens of s.
	AppendIDs(dst []uint32, s string) []uint32
	// Count returns the number of tokens of s.
	Count(s string) int
}

type dummyTokenizer struct{}

func (dummyTokenizer) AppendIDs(dst []uint32, s string) []uint32 { return AppendTokenIDs(dst, s) }
func (dummyTokenizer) Count(s string) int                        { return CountTokens(s) }

// Dummy is the dummy tokenizer as a Tokenizer.
var Dummy Tokenizer = dummyTokenizer{}
