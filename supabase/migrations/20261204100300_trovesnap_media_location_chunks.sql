-- Migration 51 (issue 16, attack of finding F10). StripLocation removed a
-- PNG's eXIf chunk, but ExifTool reads Exif from a chunk of any case of
-- "eXIf" or "zxIf" too (PNG.pm's %stdCase) and XMP from a "tXMP" chunk (a
-- 2001 XMP draft's place). Each is ancillary, so decoders show the photo:
-- trovesnap stored one with its GPS, and so did a direct call. StripLocation
-- now removes them (ingest/location.go locationChunk) and media_png_location
-- refuses them; likewise a WebP's "XMP\0" chunk (ExifTool reads XMP from
-- it: a writer's error) next to "XMP " (media_webp_location), and a GIF's
-- XMP and ImageMagick 8BIM/IPTC application extensions in any ASCII case
-- of their identifier (ImageMagick compares it so: media_gif_location).
-- Otherwise the walk is migration 48's.
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

-- WebP: EXIF and "XMP " (or "XMP\0") chunks, the VP8X flags that announce
-- them, anything
-- after the RIFF's declared end.
CREATE OR REPLACE FUNCTION trovesnap.media_webp_location(p bytea) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    n    bigint := length(p);
    e    bigint := trovesnap.media_u32(p, 4, true) + 8;
    i    bigint := 12;
    cl   bigint;
    nx   bigint;
    typ  bytea;
    steps integer := 0;
BEGIN
    IF e > n OR e < 12 THEN
        RETURN true;
    END IF;
    WHILE i < e LOOP
        steps := steps + 1;
        IF steps > 65536 OR i + 8 > e THEN -- ingest's maxChunks
            RETURN true;
        END IF;
        cl := trovesnap.media_u32(p, i + 4, true);
        nx := i + 8 + cl + (cl & 1);
        IF nx > e THEN
            -- An odd last chunk may go without its pad byte.
            IF nx - 1 <> e OR cl & 1 = 0 THEN
                RETURN true;
            END IF;
            nx := e;
        END IF;
        typ := substring(p FROM i::int + 1 FOR 4);
        IF typ = 'EXIF'::bytea OR typ = 'XMP '::bytea OR typ = '\x584d5000'::bytea -- "XMP\0"
           OR typ = 'VP8X'::bytea AND cl >= 1 AND get_byte(p, i::int + 8) & 12 <> 0 THEN
            RETURN true;
        END IF;
        i := nx;
    END LOOP;
    RETURN e <> n;
END
$$;

-- GIF: the application extensions that carry XMP or IPTC, anything after
-- the trailer; what cannot be walked is refused (StripLocation refuses it
-- before the first image and cuts it after).
CREATE OR REPLACE FUNCTION trovesnap.media_gif_location(p bytea) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    n   bigint := length(p);
    i   bigint := 13;
    j   bigint;
    b   integer;
    sb  integer;
    id  bytea;
    steps integer := 0;
BEGIN
    IF n < 13 THEN
        RETURN true;
    END IF;
    IF get_byte(p, 10) & 128 <> 0 THEN
        i := i + (3 << ((get_byte(p, 10) & 7) + 1));
    END IF;
    LOOP
        steps := steps + 1;
        IF i >= n OR steps > 65536 THEN -- ingest's maxChunks, blocks and sub-blocks
            RETURN true;
        END IF;
        b := get_byte(p, i::int);
        IF b = 59 THEN -- trailer
            RETURN i + 1 < n;
        ELSIF b = 33 THEN -- extension: label, then sub-blocks
            IF i + 2 > n THEN
                RETURN true;
            END IF;
            j := i + 2;
        ELSIF b = 44 THEN -- image: descriptor, local colour table, LZW code size, sub-blocks
            IF i + 10 > n THEN
                RETURN true;
            END IF;
            j := i + 10;
            IF get_byte(p, i::int + 9) & 128 <> 0 THEN
                j := j + (3 << ((get_byte(p, i::int + 9) & 7) + 1));
            END IF;
            j := j + 1;
        ELSE
            RETURN true;
        END IF;
        -- The sub-blocks from j.
        LOOP
            steps := steps + 1;
            IF j >= n OR steps > 65536 THEN
                RETURN true;
            END IF;
            sb := get_byte(p, j::int);
            j := j + 1;
            EXIT WHEN sb = 0;
            j := j + sb;
        END LOOP;
        IF b = 33 AND get_byte(p, i::int + 1) = 255 AND i + 14 <= n AND get_byte(p, i::int + 2) = 11 THEN
            id := substring(p FROM i::int + 4 FOR 11);
            -- In any ASCII case (ImageMagick reads them so).
            IF translate(encode(id, 'escape'), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
               IN ('xmp dataxmp', 'mgk8bim0000', 'mgkiptc0000') THEN
                RETURN true;
            END IF;
        END IF;
        i := j;
    END LOOP;
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (51, '20261204100300_trovesnap_media_location_chunks');

RESET ROLE;
