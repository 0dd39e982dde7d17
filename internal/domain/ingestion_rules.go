package domain

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Domain rules of the listing and export services that the Backend applies
// inside its write transaction (so that a stored draft or export is exactly
// what was computed from the facts it read). They are pure and deterministic.

// Draft copy bounds.
const (
	DraftTitleMax        = 80 // the strictest channel's title limit (eBay)
	DraftDefaultMaxWords = 120
	draftMinBodyWords    = 10
)

// ComposeListingCopy drafts a title and description from recorded facts. It
// restates facts and adds a few plainly generated sentences; it never invents
// a maker, an age, a material or a price. Every piece is a CopySegment that
// says whether it was observed, supplied or generated, and every generated
// sentence that claims something about the item is listed as unverified.
func ComposeListingCopy(f DraftFacts, tone string, maxWords int) DraftCopy {
	if maxWords <= 0 {
		maxWords = DraftDefaultMaxWords
	}
	if !slices.Contains(DraftTones, tone) {
		tone = "plain"
	}
	c := DraftCopy{Segments: []CopySegment{}, Unverified: []string{}}

	// Title: the recorded title, cut at a word boundary to fit every channel.
	title := cutWords(CleanLine(f.Title), DraftTitleMax)
	c.Segments = append(c.Segments, CopySegment{Part: "title", Field: "title", Text: title, Origin: f.Origin})
	c.Title = title
	if f.Quantity > 1 {
		suffix := fmt.Sprintf(" (set of %d)", f.Quantity)
		if utf8.RuneCountInString(c.Title+suffix) <= DraftTitleMax {
			c.Segments = append(c.Segments, CopySegment{Part: "title", Field: "quantity", Text: suffix, Origin: f.Origin})
			c.Title += suffix
		}
	}

	// Description: the fixed sentences first, so the recorded description
	// gets the words that remain.
	var tail []CopySegment
	if cond := conditionWords[f.Condition]; cond != "" {
		tail = append(tail,
			CopySegment{Part: "description", Text: "Condition:", Origin: OriginGenerated},
			CopySegment{Part: "description", Field: "condition", Text: cond + ".", Origin: f.Origin})
	}
	if f.Room != "" && tone != "concise" {
		tail = append(tail,
			CopySegment{Part: "description", Text: "From the", Origin: OriginGenerated},
			CopySegment{Part: "description", Field: "room", Text: strings.ReplaceAll(CleanLine(f.Room), "_", " ") + ".", Origin: f.Origin})
	}
	if closer := toneClosers[tone]; closer != "" {
		tail = append(tail, CopySegment{Part: "description", Text: closer, Origin: OriginGenerated})
		c.Unverified = append(c.Unverified, closer)
	}
	tail = append(tail, CopySegment{Part: "description", Text: pickupLine, Origin: OriginGenerated})
	c.Unverified = append(c.Unverified, pickupLine)

	used := 0
	for _, s := range tail {
		used += len(strings.Fields(s.Text))
	}
	budget := max(maxWords-used, draftMinBodyWords)
	var desc []CopySegment
	if body := firstWords(strings.Join(strings.Fields(CleanText(f.Description)), " "), budget); body != "" {
		desc = append(desc, CopySegment{Part: "description", Field: "description", Text: body, Origin: f.Origin})
	}
	desc = append(desc, tail...)
	texts := make([]string, 0, len(desc))
	for _, s := range desc {
		texts = append(texts, s.Text)
	}
	c.Description = strings.Join(texts, " ")
	c.Segments = append(c.Segments, desc...)
	return c
}

var conditionWords = map[string]string{
	"new": "new", "excellent": "excellent", "good": "good", "fair": "fair, with visible wear", "poor": "poor",
	"for_parts": "for parts or repair",
}

var toneClosers = map[string]string{
	"warm":      "A lovely piece with plenty of life left in it.",
	"collector": "Of interest to collectors.",
}

const pickupLine = "Sold as is at the estate sale."

// cutWords bounds s to max code points, cutting at the last space that fits
// when there is one.
func cutWords(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	cut := Truncate(s, max)
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimSpace(cut)
}

// firstWords keeps the first n words of s, marking a cut with an ellipsis.
func firstWords(s string, n int) string {
	words := strings.Fields(s)
	if len(words) <= n {
		return s
	}
	return strings.Join(words[:n], " ") + "…"
}

// Channel title limits.
var channelTitleMax = map[string]int{ChannelEbay: 80, ChannelFacebook: 100, ChannelEtsy: 140, ChannelCSVFile: 200}

// ValidateExportListing applies a channel's rules to a staged listing and
// returns whether it could be delivered and the warnings a seller should
// read. Warnings are the server's own sentences: they never quote item text.
func ValidateExportListing(channel string, l ExportListing) (bool, []string) {
	valid := true
	warn := []string{}
	bad := func(msg string) { valid = false; warn = append(warn, msg) }
	switch l.Status {
	case ItemSold, ItemPendingPickup, ItemWithdrawn, ItemArchived:
		bad(fmt.Sprintf("item is %s: it cannot be listed", l.Status))
	case ItemOnHold:
		warn = append(warn, "item is on hold for a buyer")
	case ItemDraft, ItemReady:
		warn = append(warn, fmt.Sprintf("item is %s, not published on TroveSnap yet", l.Status))
	}
	if strings.TrimSpace(l.Title) == "" {
		bad("title is empty")
	} else if n := channelTitleMax[channel]; utf8.RuneCountInString(l.Title) > n {
		bad(fmt.Sprintf("title is longer than %d characters, the %s limit", n, channel))
	}
	switch channel {
	case ChannelEbay, ChannelFacebook, ChannelEtsy:
		if l.PriceCents == nil {
			bad("no public price: the channel needs one")
		} else if channel == ChannelEtsy && *l.PriceCents < 20 {
			bad("price below Etsy's minimum of $0.20")
		}
		if l.PhotoCount == 0 {
			bad("no published photo: the channel needs at least one")
		}
		if strings.TrimSpace(l.Description) == "" {
			warn = append(warn, "description is empty")
		}
	}
	switch channel {
	case ChannelEbay:
		if l.Category == "" {
			warn = append(warn, "no category: eBay needs one to place the listing")
		}
	case ChannelEtsy:
		warn = append(warn, "Etsy accepts only vintage (20+ years), handmade or craft-supply items: confirm this item qualifies")
	case ChannelCSVFile:
		if LooksLikeFormula(l.Title) || LooksLikeFormula(l.Description) {
			warn = append(warn, "text starts with =, +, - or @: it will be escaped so a spreadsheet does not run it as a formula")
		}
	}
	return valid, warn
}
