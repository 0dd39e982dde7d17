-- Migration 50 (issue 16, attack of finding F10). The asset guard
-- (migration 48) asked media_location whether a photo carries location,
-- and media_location walks a photo only when its first bytes are those of
-- a JPEG ("FF D8 FF"), a PNG, a WebP or a GIF: it answers "none" for any
-- other bytes, and nothing compared the bytes with the mime_type the caller
-- names. A direct attach stored a JPEG whose SOI is followed by one
-- extraneous byte ("FF D8 00 FF E1 Exif …": image/jpeg, libjpeg and
-- ExifTool skip it and read the Exif, GPS included) as image/jpeg, or any
-- file carrying location (a TIFF) as image/png. The guard now refuses
-- bytes that do not start as their mime_type's format does — what
-- trovesnap's own uploads always do (ingest.CheckPhoto goes by
-- http.DetectContentType, which names these types by the same first bytes)
-- — so every photo stored is one media_location walked.
-- internal/live/media_location_f10_attack_test.go holds it.

SET ROLE trovesnap_owner;

CREATE OR REPLACE FUNCTION trovesnap.source_asset_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:immutable:source_assets';
    END IF;
    IF octet_length(NEW.content) <> NEW.byte_size OR 'sha256:' || encode(sha256(NEW.content), 'hex') <> NEW.sha256 THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:invalid_input:image_base64',
            DETAIL = 'the image did not pass the server''s checks';
    END IF;
    -- The bytes start as the format their mime_type names (media_location's
    -- own test of each), so the check below walks them.
    IF NOT (NEW.mime_type = 'image/jpeg' AND substring(NEW.content FROM 1 FOR 3) = '\xffd8ff'::bytea
            OR NEW.mime_type = 'image/png' AND substring(NEW.content FROM 1 FOR 8) = '\x89504e470d0a1a0a'::bytea
            OR NEW.mime_type = 'image/webp' AND substring(NEW.content FROM 1 FOR 4) = 'RIFF'::bytea
               AND substring(NEW.content FROM 9 FOR 4) = 'WEBP'::bytea
            OR NEW.mime_type = 'image/gif' AND substring(NEW.content FROM 1 FOR 6) IN ('GIF87a'::bytea, 'GIF89a'::bytea)) THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:invalid_input:image_base64',
            DETAIL = 'the image''s bytes are not the format its mime_type names';
    END IF;
    IF trovesnap.media_location(NEW.content) THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:invalid_input:image_base64',
            DETAIL = 'the image still carries location metadata (or its container cannot be walked): trovesnap strips it before an upload';
    END IF;
    RETURN NEW;
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (50, '20261204100200_trovesnap_media_type_guard');

RESET ROLE;
