-- Migration 51 (issue 16, attack of finding F10). StripLocation removed a
-- PNG's eXIf chunk, but ExifTool reads Exif from a chunk of any case of
-- "eXIf" or "zxIf" too (PNG.pm's %stdCase) and XMP from a "tXMP" chunk (a
-- 2001 XMP draft's place). Each is ancillary, so decoders show the photo:
-- trovesnap stored one with its GPS, and so did a direct call. StripLocation
-- now removes them (ingest/location.go locationChunk) and media_png_location
-- refuses them; otherwise the walk is migration 48's.
-- internal/ingest/location_f10_attack_test.go holds it, with the table
-- (locationtest) that holds the two to one answer.

SET ROLE trovesnap_owner;

-- PNG: eXIf chunks (and zxIf, in any ASCII case), XMP (keyword
-- "XML:com.adobe.xmp", or a tXMP chunk) and "Raw profile type …" text
-- chunks (keyword in ASCII case), anything after IEND.
CREATE OR REPLACE FUNCTION trovesnap.media_png_location(p bytea) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    n   bigint := length(p);
    i   bigint := 8;
    cl  bigint;
    typ bytea;
    steps integer := 0;
BEGIN
    LOOP
        steps := steps + 1;
        IF steps > 65536 OR i + 12 > n THEN -- ingest's maxChunks
            RETURN true;
        END IF;
        cl := trovesnap.media_u32(p, i, false);
        IF cl > 2147483647 OR i + 12 + cl > n THEN
            RETURN true;
        END IF;
        typ := substring(p FROM i::int + 5 FOR 4);
        -- Exif: any ASCII case of "eXIf" or "zxIf"; XMP in "tXMP".
        IF translate(encode(typ, 'escape'), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') IN ('exif', 'zxif')
           OR typ = 'tXMP'::bytea THEN
            RETURN true;
        END IF;
        IF (typ = 'iTXt'::bytea OR typ = 'tEXt'::bytea OR typ = 'zTXt'::bytea)
           AND (trovesnap.media_starts(p, i + 8, cl, 'XML:com.adobe.xmp'::bytea)
                AND (cl = 17 OR get_byte(p, i::int + 8 + 17) = 0)
                OR cl >= 16 AND translate(encode(substring(p FROM i::int + 9 FOR 16), 'escape'),
                                          'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') = 'raw profile type') THEN
            RETURN true;
        END IF;
        i := i + 12 + cl;
        IF typ = 'IEND'::bytea THEN
            RETURN i < n;
        END IF;
    END LOOP;
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (51, '20261204100300_trovesnap_media_location_png_chunks');

RESET ROLE;
