package live

import (
	"context"
	"errors"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The media writes (§13, §29) in live mode: AttachCandidateMedia and
// CreateMediaCandidate, mirroring the embedded store (store/assets.go,
// store/ingestion.go) and each ONE database transaction (supabase
// migration 12).
//
// The store keeps an asset's bytes in a file next to its database; live
// mode keeps them in Postgres, in the private source_assets table next to
// their metadata (docs/live-media.md). So the bytes, the tenant's quota
// check, the asset and attachment rows, the candidate chain, the
// plugin_event and the idempotency row commit together or not at all:
// nothing is ever orphaned, no second service or key is involved, and a
// tenant over its quota is refused before anything is written.
//
// The photo checks run in Go before any write, exactly as in mock mode:
// the catalog decodes and checks the image (internal/ingest), and
// AttachCandidateMedia implements domain.IngestionBackend: a photo (the
// uploaded bytes, or an asset of the tenant by id) attached to a candidate
// awaiting review, deduplicated by content hash within the tenant and
// idempotent per candidate and asset (mcp_attach_candidate_media). No item
// and no item photo is touched.
func (b *Backend) AttachCandidateMedia(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	if err := domain.CheckMediaInput(&in); err != nil {
		return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, err
	}
	if !domain.ValidID(domain.PrefixCandidate, in.CandidateID) {
		return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, domain.Invalid("candidate_id", "required: the candidate the photo documents")
	}
	return b.mediaWrite(ctx, p, w, "mcp_attach_candidate_media", "candidate_id", in.CandidateID, in)
}

// CreateMediaCandidate implements domain.IngestionBackend: an attach_media
// candidate proposing the photo for an item, with its provenance run and
// record, what the item was when it was proposed, and the photo attached
// to the candidate (mcp_create_media_candidate). The item is never changed.
func (b *Backend) CreateMediaCandidate(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	if err := domain.CheckMediaInput(&in); err != nil {
		return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, err
	}
	if !domain.ValidID(domain.PrefixItem, in.ItemID) {
		return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, domain.Invalid("item_id", "required: the item the photo is proposed for")
	}
	return b.mediaWrite(ctx, p, w, "mcp_create_media_candidate", "item_id", in.ItemID, in)
}

// mediaWrite calls the media RPC fn for the checked input in, whose target
// is field = id. Uploaded bytes travel base64 in the JSON body (encoding/json
// encodes a []byte so), with the metadata the photo checks reported.
func (b *Backend) mediaWrite(ctx context.Context, p domain.Principal, w domain.WriteMeta, fn, field, id string, in domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	var zero domain.CandidateMediaCreated
	tok, err := b.tokenOf(p)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	if err := w.Check(p); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	media := map[string]any{field: id, "caption": in.Caption}
	args := writeArgs(w)
	args["p_content"] = nil
	if up := in.Upload; up != nil {
		media["mime_type"], media["width"], media["height"] = up.MimeType, up.Width, up.Height
		media["byte_size"], media["content_hash"] = up.Size, up.ContentHash
		args["p_content"] = up.Bytes
	} else {
		media["asset_id"] = in.AssetID
	}
	args["p_media"] = media
	var a writeAnswer[domain.CandidateMediaCreated]
	if err := b.callClient(ctx, tok, fn, args, &a); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	if a.Result.CandidateID == "" || a.Result.MediaID == "" || a.Result.AssetID == "" {
		return zero, domain.WriteOutcome{}, b.unavailable(fn, errors.New("answer without the candidate, media or asset"))
	}
	return a.Result, a.outcome(), nil
}
