package domain

import (
	"strconv"
	"strings"
	"unicode"
)

// CheckMarketplaceQuery checks the text and dates of a public search and
// returns the words to search for: the buyer's text split into lower-case
// words of letters and digits, without repeats. Every Backend applies it,
// so each accepts and refuses the same queries; a word is only ever matched
// as a whole string (never read as search syntax).
func CheckMarketplaceQuery(q MarketplaceQuery) ([]string, error) {
	terms := searchTerms(q.Text)
	switch {
	case strings.TrimSpace(q.Text) != "" && len(terms) == 0:
		return nil, Invalid("query", "has no words to search for")
	case len(terms) > MaxSearchTerms:
		return nil, Invalid("query", "at most "+strconv.Itoa(MaxSearchTerms)+" words")
	}
	if q.From != nil && q.To != nil && !q.From.Before(*q.To) {
		return nil, Invalid("date_from", "must not be after date_to")
	}
	return terms, nil
}

func searchTerms(text string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !seen[f] {
			seen[f] = true
			terms = append(terms, f)
		}
	}
	return terms
}
