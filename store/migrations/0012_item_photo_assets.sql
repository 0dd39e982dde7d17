-- Issue 16: a promotion gives the item the candidate's photos. An item
-- photo made from a source asset names it (NULL for the fixtures' photos,
-- which have no asset); its storage key is the asset's storage path. The
-- asset stays private: a photo is public only once a publication proposal
-- naming it is approved and executed (item_photos.published).
ALTER TABLE item_photos ADD COLUMN asset_id TEXT REFERENCES source_assets (id);
