package loadgen

import (
	"container/list"
	"math/rand/v2"
	"sync"
)

// words is the corpus prompts are drawn from: short, common English words that BPE tokenizers
// (GPT, Llama, Qwen) encode as one token each when preceded by a space. A synthesised prompt of
// n words is therefore about n tokens; the count is approximate (a tokenizer may merge or split
// a few), which keeps the prefix-sharing structure while losing token exactness.
var words = [256]string{
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
	"on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
	"had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
	"been", "if", "more", "when", "will", "would", "who", "so", "no", "she", "other", "its",
	"may", "these", "what", "them", "than", "some", "him", "time", "into", "only", "do", "could",
	"new", "about", "two", "first", "then", "also", "after", "any", "like", "our", "out", "my",
	"should", "made", "up", "over", "such", "most", "your", "me", "even", "must", "well", "back",
	"years", "much", "where", "way", "many", "before", "those", "just", "how", "through",
	"between", "own", "see", "work", "life", "long", "same", "used", "down", "each", "people",
	"never", "state", "world", "because", "here", "good", "both", "day", "while", "still", "part",
	"great", "man", "general", "under", "last", "since", "small", "year", "might", "place",
	"without", "again", "make", "three", "against", "came", "take", "number", "system", "found",
	"around", "point", "house", "every", "second", "few", "water", "form", "case", "school",
	"public", "left", "given", "end", "often", "large", "high", "within", "hand", "old", "know",
	"early", "group", "power", "began", "war", "city", "name", "government", "light", "home",
	"until", "called", "side", "country", "family", "level", "thought", "order", "night", "less",
	"always", "fact", "line", "best", "went", "head", "local", "think", "almost", "area", "set",
	"music", "open", "book", "read", "law", "body", "half", "game", "real", "road", "rather",
	"free", "white", "black", "field", "seen", "once", "story", "room", "mind", "among", "became",
	"rate", "market", "money", "door", "land", "price", "table", "model", "data", "river",
	"voice", "sound", "paper", "plan", "tree", "star", "stone", "green", "blue", "red", "heart",
	"word", "mean", "north", "south", "east", "west", "fire", "wind", "rain", "snow", "cold",
	"warm", "sun", "moon", "sea", "ship", "town", "king", "queen", "child", "bird", "fish",
}

// synth builds prompts: one text block per hash id (byte-identical for equal ids, derived
// from the seed and the id alone, so the cache only saves work and can evict freely) and fresh
// text for rows without hash ids (derived from the seed and the request's index).
type synth struct {
	seed uint64

	mu       sync.Mutex
	maxBytes int
	used     int
	lru      *list.List // of *block, most recent in front
	byKey    map[blockKey]*list.Element
}

type blockKey struct {
	id    int64
	words int
}

type block struct {
	key  blockKey
	text []byte
}

func newSynth(seed uint64, maxBytes int) *synth {
	return &synth{seed: seed, maxBytes: maxBytes, lru: list.New(), byKey: map[blockKey]*list.Element{}}
}

// stream domains keep block text, fresh prompts and tails independent of each other.
const (
	domainBlock = 0x9e3779b97f4a7c15
	domainFresh = 0xbf58476d1ce4e5b9
	domainTail  = 0x94d049bb133111eb
)

// appendWords appends n words, each with a leading space, drawn from a PCG stream.
func appendWords(dst []byte, seed, stream uint64, n int) []byte {
	r := rand.NewPCG(seed, stream) // the source itself (rand.New's Uint64 is its Uint64), on the stack
	var bits uint64
	for i := 0; i < n; i++ {
		if i%8 == 0 {
			bits = r.Uint64()
		}
		dst = append(dst, ' ')
		dst = append(dst, words[byte(bits)]...)
		bits >>= 8
	}
	return dst
}

// blockText is the text of hash id id, blockSize words long.
func (s *synth) blockText(id int64, blockSize int) []byte {
	key := blockKey{id: id, words: blockSize}
	s.mu.Lock()
	if el, ok := s.byKey[key]; ok {
		s.lru.MoveToFront(el)
		text := el.Value.(*block).text
		s.mu.Unlock()
		return text
	}
	s.mu.Unlock()
	text := appendWords(make([]byte, 0, blockSize*6), s.seed^domainBlock, uint64(id), blockSize)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byKey[key]; ok { // another goroutine built it meanwhile
		return el.Value.(*block).text
	}
	if len(text) > s.maxBytes {
		return text
	}
	for s.used+len(text) > s.maxBytes && s.lru.Len() > 0 {
		old := s.lru.Remove(s.lru.Back()).(*block)
		delete(s.byKey, old.key)
		s.used -= len(old.text)
	}
	s.byKey[key] = s.lru.PushFront(&block{key: key, text: text})
	s.used += len(text)
	return text
}

// prompt is a synthesised prompt: the blocks of its hash ids in order, cut or extended to
// inputTokens words (an extension is a deterministic tail drawn from word stream `stream`,
// tailStream's), or fresh text of inputTokens words from that stream when there are no hash ids. AIPerf's rule that the last block
// is shorter (inputTokens - (len(ids)-1)*blockSize words) falls out of the cut, so a row's
// shorter last block is a prefix of the same id's full block elsewhere.
func (s *synth) prompt(stream uint64, inputTokens int, ids []int64, blockSize int) string {
	return string(s.appendPrompt(make([]byte, 0, promptBytes(inputTokens, ids, blockSize)), stream, inputTokens, ids, blockSize))
}

// promptBytes is about the length of a synthesised prompt (words average under 6 bytes).
func promptBytes(inputTokens int, ids []int64, blockSize int) int {
	if inputTokens <= 0 && blockSize > 0 {
		inputTokens = len(ids) * blockSize
	}
	return max(inputTokens, 0) * 6
}

// appendPrompt appends prompt's text to buf. The text is printable ASCII words, each led by a
// space, so it goes into a JSON string as it is.
func (s *synth) appendPrompt(buf []byte, stream uint64, inputTokens int, ids []int64, blockSize int) []byte {
	if len(ids) == 0 || blockSize <= 0 {
		return appendWords(buf, s.seed^domainFresh, stream, inputTokens)
	}
	if inputTokens <= 0 { // a row with ids but no length: whole blocks
		inputTokens = len(ids) * blockSize
	}
	have := 0
	for _, id := range ids {
		if have >= inputTokens {
			break
		}
		text := s.blockText(id, blockSize)
		need := inputTokens - have
		if need >= blockSize {
			buf = append(buf, text...)
			have += blockSize
			continue
		}
		buf = append(buf, text[:wordsPrefixLen(text, need)]...)
		have += need
	}
	if have < inputTokens {
		buf = appendWords(buf, s.seed^domainTail, stream, inputTokens-have)
	}
	return buf
}

// tailStream is the word stream of request index i's synthesised words: its TailKey's when it
// has one (the top bit keeps keys apart from indices), else its own.
func tailStream(i int, key uint64) uint64 {
	if key != 0 {
		return key | 1<<63
	}
	return uint64(i)
}

// wordsPrefixLen is the byte length of the first n space-led words of text.
func wordsPrefixLen(text []byte, n int) int {
	seen := 0
	for j, c := range text {
		if c == ' ' {
			if seen == n {
				return j
			}
			seen++
		}
	}
	return len(text)
}
