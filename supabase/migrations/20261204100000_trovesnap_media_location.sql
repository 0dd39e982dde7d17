-- Issue 16, finding F10 of its attack: the database refuses a photo that
-- still carries location metadata.
--
-- trovesnap strips a photo's location before it hashes and uploads it
-- (ingest.StripLocation, spec §29.3). But the client token's holder can call
-- mcp_attach_candidate_media or mcp_create_media_candidate itself, with the
-- original bytes and their true size and hash: until now the database
-- checked only those, so a photo with its Exif GPS (the seller's home,
-- usually) could be stored, promoted onto an item and published.
--
-- media_location(bytes) is true when StripLocation would change the bytes
-- or cannot walk them: it walks the container exactly as StripLocation does
-- and answers whether anything it removes is there. So a photo trovesnap
-- uploaded (a fixed point of StripLocation) is accepted, and a photo that
-- still carries location is refused, whoever sends it. The Go function is
-- the rule; this one is held to it by one table of photos and their
-- mutations (internal/live TestMediaLocation_AgreesWithStripLocation), so a
-- change to either that the other does not follow fails there.
--
-- The walk reads bytes where they are (get_byte) and looks for markers 4 KiB
-- at a time (position over a substring); entropy-coded data denser in 0xFF
-- than a photo's is passed over 64 KiB at a time (one anchored regular
-- expression over its hex), runs of 0xFF 4 KiB at a time (ltrim). So no
-- input costs a plpgsql loop per byte, and the walk stops where
-- StripLocation stops (maxJPEGMarkers, maxChunks, maxExifEntries): a few
-- thousand steps at most.
--
-- The attack on this check (before it was released) found, and this file
-- holds the fixes of: entropy-coded data of "FF FF 00" repeated ended the
-- expression's match at each fill run (minutes for 8 MiB): it now passes
-- fill bytes before a stuffed byte or an RST marker, and its window grows
-- from 4 KiB while the data fills it; overlapping IFDs made one 12 KiB Exif
-- segment 16 IFDs of 1024 entries (9 s for 8 MiB): at most maxExifEntries
-- (16384) IFDs and entries are read in all of a JPEG's Exif segments, in Go
-- and here (media_tiff_entries); bytes not starting as their mime_type's
-- format were stored unwalked ("FF D8 00 FF E1 Exif…" is read by image/jpeg
-- and ExifTool): the guard refuses them; and readers find location in more
-- places than StripLocation looked — an APP1 that is not Exif (ExifTool
-- reads XMP from one starting "http" or holding "<exif:"), a PNG's zxIf,
-- any-case eXIf and tXMP, a WebP's "XMP\0", a GIF's XMP, IPTC and 8BIM
-- extensions in any case of their identifier (ImageMagick's comparison):
-- StripLocation removes each and the walks below refuse each.

SET ROLE trovesnap_owner;

-- An unsigned 16- or 32-bit integer at byte offset at, little-endian or not.
-- (In SQL, | and << bind alike, left to right: the parentheses matter.)
-- These SQL helpers are not STRICT, so the planner inlines them into each
-- plpgsql expression; a STRICT one would run as a function call each time.
CREATE FUNCTION trovesnap.media_u16(p bytea, at bigint, le boolean) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN le THEN get_byte(p, at::int) | (get_byte(p, at::int + 1) << 8)
                ELSE (get_byte(p, at::int) << 8) | get_byte(p, at::int + 1) END
$$;

CREATE FUNCTION trovesnap.media_u32(p bytea, at bigint, le boolean) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN le THEN trovesnap.media_u16(p, at, true)::bigint | (trovesnap.media_u16(p, at + 2, true)::bigint << 16)
                ELSE (trovesnap.media_u16(p, at, false)::bigint << 16) | trovesnap.media_u16(p, at + 2, false)::bigint END
$$;

-- Whether the n bytes at offset at start with prefix.
CREATE FUNCTION trovesnap.media_starts(p bytea, at bigint, n bigint, prefix bytea) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT n >= length(prefix) AND substring(p FROM at::int + 1 FOR length(prefix)) = prefix
$$;

-- The offset of the first 0xFF at or after i, or a value >= length(p).
CREATE FUNCTION trovesnap.media_next_ff(p bytea, i bigint) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    n bigint := length(p);
    k integer;
BEGIN
    WHILE i < n LOOP
        k := position('\xff'::bytea IN substring(p FROM i::int + 1 FOR 4096));
        IF k > 0 THEN
            RETURN i + k - 1;
        END IF;
        i := i + 4096;
    END LOOP;
    RETURN n;
END
$$;

-- The TIFF structure of an Exif segment (tl bytes at offset t0), as
-- StripLocation's stripTIFFLocation walks it, with at most budget IFDs
-- and IFD entries read (each counting 1): the number read when StripLocation's stripTIFFLocation
-- leaves the segment as it is, or -1 when it would change it (a GPS IFD
-- pointer, or an XMP, IPTC or Photoshop block) or finds it unsafe to walk
-- (a header it does not know, an IFD out of bounds or of over 1024
-- entries, over 16 IFDs, entries past the budget) — in which case the
-- whole segment would be dropped.
CREATE FUNCTION trovesnap.media_tiff_entries(p bytea, t0 bigint, tl bigint, budget bigint) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    le    boolean;
    queue bigint[];
    qi    integer := 1;
    seen  bigint[] := '{}';
    off   bigint;
    cnt   bigint;
    at    bigint;
    tag   integer;
    read  bigint := 0;
BEGIN
    IF tl < 8 THEN
        RETURN -1;
    END IF;
    IF substring(p FROM t0::int + 1 FOR 4) = '\x49492a00'::bytea THEN
        le := true;
    ELSIF substring(p FROM t0::int + 1 FOR 4) = '\x4d4d002a'::bytea THEN
        le := false;
    ELSE
        RETURN -1;
    END IF;
    queue := ARRAY[trovesnap.media_u32(p, t0 + 4, le)];
    WHILE qi <= cardinality(queue) LOOP
        off := queue[qi];
        qi := qi + 1;
        CONTINUE WHEN off = 0 OR off = ANY (seen);
        IF cardinality(seen) = 16 THEN
            RETURN -1;
        END IF;
        seen := seen || off;
        IF off < 8 OR off + 2 > tl THEN
            RETURN -1;
        END IF;
        cnt := trovesnap.media_u16(p, t0 + off, le);
        IF cnt > 1024 OR off + 2 + 12 * cnt + 4 > tl OR read + 1 + cnt > budget THEN
            RETURN -1;
        END IF;
        read := read + 1 + cnt;
        FOR e IN 0 .. cnt - 1 LOOP
            at := t0 + off + 2 + 12 * e;
            tag := trovesnap.media_u16(p, at, le);
            -- GPS IFD (0x8825), XMLPacket (0x02BC), IPTC-NAA (0x83BB), Photoshop (0x8649).
            IF tag = 34853 OR tag = 700 OR tag = 33723 OR tag = 34377 THEN
                RETURN -1;
            END IF;
            -- Exif IFD (0x8769), interoperability IFD (0xA005).
            IF tag = 34665 OR tag = 40965 THEN
                queue := queue || trovesnap.media_u32(p, at + 8, le);
            END IF;
        END LOOP;
        queue := queue || trovesnap.media_u32(p, t0 + off + 2 + 12 * cnt, le);
    END LOOP;
    RETURN read;
END
$$;

CREATE FUNCTION trovesnap.media_jpeg_location(p bytea) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    n  bigint := length(p);
    i  bigint := 2;
    m  integer;
    c  integer;
    sl bigint;
    ps bigint;
    pl bigint;
    h  integer;
    w  bytea;
    k  integer;
    steps integer := 0;
    hits  integer := 0;
    win   integer := 4096;
    ents  bigint := 0;
    r     bigint;
BEGIN
    LOOP
        steps := steps + 1;
        IF steps > 4096 THEN -- ingest's maxJPEGMarkers
            RETURN true;
        END IF;
        i := trovesnap.media_next_ff(p, i);
        IF i + 1 >= n THEN
            RETURN true;
        END IF;
        m := get_byte(p, i::int + 1);
        i := i + 2;
        CONTINUE WHEN m = 0;
        WHILE m = 255 LOOP
            IF i >= n THEN
                RETURN true;
            END IF;
            -- A run of fill bytes, 4 KiB at a time.
            w := substring(p FROM i::int + 1 FOR 4096);
            k := length(w) - length(ltrim(w, '\xff'::bytea));
            i := i + k;
            CONTINUE WHEN k = length(w);
            m := get_byte(p, i::int);
            i := i + 1;
        END LOOP;
        IF m = 217 THEN -- EOI: anything after it is removed
            RETURN i < n;
        END IF;
        CONTINUE WHEN m BETWEEN 208 AND 215; -- RST0..RST7
        IF i + 2 > n THEN
            RETURN true;
        END IF;
        sl := (get_byte(p, i::int) << 8) | get_byte(p, i::int + 1);
        IF sl < 2 OR i + sl > n THEN
            RETURN true;
        END IF;
        ps := i + 2;
        pl := sl - 2;
        i := i + sl;
        IF m = 225 THEN -- APP1
            -- An Exif header as ExifTool finds it: "Exif\0" in any case
            -- after at most 4 other bytes.
            h := -1;
            FOR j IN 0 .. 4 LOOP
                EXIT WHEN j + 5 > pl;
                IF get_byte(p, (ps + j)::int) | 32 = 101 AND get_byte(p, (ps + j)::int + 1) | 32 = 120
                   AND get_byte(p, (ps + j)::int + 2) | 32 = 105 AND get_byte(p, (ps + j)::int + 3) | 32 = 102
                   AND get_byte(p, (ps + j)::int + 4) = 0 THEN
                    h := j;
                    EXIT;
                END IF;
            END LOOP;
            IF h >= 0 THEN
                IF pl < h + 6 THEN
                    RETURN true;
                END IF;
                -- At most 16384 IFDs and entries in all (ingest's maxExifEntries).
                r := trovesnap.media_tiff_entries(p, ps + h + 6, pl - h - 6, 16384 - ents);
                IF r < 0 THEN
                    RETURN true;
                END IF;
                ents := ents + r;
            ELSE
                -- Any other APP1 (XMP, what ExifTool also reads as XMP,
                -- GPS records) is removed.
                RETURN true;
            END IF;
        ELSIF m = 237 AND trovesnap.media_starts(p, ps, pl, 'Photoshop 3.0\000'::bytea) -- APP13
           OR m = 226 AND trovesnap.media_starts(p, ps, pl, 'MPF\000'::bytea)            -- APP2
           OR m = 230 AND trovesnap.media_starts(p, ps, pl, 'GoPro\000'::bytea) THEN     -- APP6
            RETURN true;
        ELSIF m = 218 THEN -- SOS: pass over the entropy-coded data
            LOOP
                IF hits < 16384 THEN
                    -- The next 0xFF, 4 KiB at a time: a photo has one in
                    -- about 256 bytes (a stuffed byte).
                    i := trovesnap.media_next_ff(p, i);
                ELSE
                    -- Denser than any photo: bytes other than 0xFF, and
                    -- stuffed bytes and RST markers (FF 00, FF D0..D7, each
                    -- after any number of fill bytes) passed over by one
                    -- anchored regular expression over a window's hex. The
                    -- window grows from 4 KiB to 64 KiB while the data
                    -- fills it and starts at 4 KiB again after a stop, so
                    -- a stop (a marker, a fill run across the window's
                    -- edge) costs at most the bytes passed over since the
                    -- last one, plus 4 KiB.
                    w := substring(p FROM i::int + 1 FOR win);
                    k := length(substring(encode(w, 'hex') FROM '^(?:[0-9a-e].|f[0-9a-e]|(?:ff)+(?:00|d[0-7]))*')) / 2;
                    i := i + k;
                    IF k = length(w) AND i < n THEN
                        win := least(win * 2, 65536);
                        CONTINUE;
                    END IF;
                    win := 4096;
                END IF;
                -- i is at an 0xFF, or at the end.
                EXIT WHEN i + 1 >= n;
                hits := hits + 1;
                c := get_byte(p, i::int + 1);
                IF c = 0 OR c BETWEEN 208 AND 215 THEN
                    i := i + 2;
                ELSIF c = 255 THEN
                    -- Fill bytes: on to the last 0xFF of the run, whose
                    -- successor decides.
                    LOOP
                        w := substring(p FROM i::int + 1 FOR 4096);
                        k := length(w) - length(ltrim(w, '\xff'::bytea));
                        i := i + k;
                        EXIT WHEN k < length(w) OR i >= n;
                    END LOOP;
                    i := i - 1;
                ELSE
                    EXIT;
                END IF;
            END LOOP;
        END IF;
    END LOOP;
END
$$;

-- PNG: eXIf chunks (and zxIf, in any ASCII case), XMP (keyword
-- "XML:com.adobe.xmp", or a tXMP chunk) and "Raw profile type …" text
-- chunks (keyword in ASCII case), anything after IEND.
CREATE FUNCTION trovesnap.media_png_location(p bytea) RETURNS boolean
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
CREATE FUNCTION trovesnap.media_webp_location(p bytea) RETURNS boolean
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
CREATE FUNCTION trovesnap.media_gif_location(p bytea) RETURNS boolean
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

-- Whether a photo's bytes carry location metadata StripLocation removes,
-- or cannot be walked. Other formats carry none StripLocation knows.
CREATE FUNCTION trovesnap.media_location(p bytea) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    n bigint;
BEGIN
    -- One flat copy (a compressed or out-of-line value would be expanded
    -- again by every read below).
    p := p || '\x'::bytea;
    n := length(p);
    IF n >= 3 AND substring(p FROM 1 FOR 3) = '\xffd8ff'::bytea THEN
        RETURN trovesnap.media_jpeg_location(p);
    ELSIF substring(p FROM 1 FOR 8) = '\x89504e470d0a1a0a'::bytea THEN
        RETURN trovesnap.media_png_location(p);
    ELSIF n >= 12 AND substring(p FROM 1 FOR 4) = 'RIFF'::bytea AND substring(p FROM 9 FOR 4) = 'WEBP'::bytea THEN
        RETURN trovesnap.media_webp_location(p);
    ELSIF substring(p FROM 1 FOR 6) = 'GIF87a'::bytea OR substring(p FROM 1 FOR 6) = 'GIF89a'::bytea THEN
        RETURN trovesnap.media_gif_location(p);
    END IF;
    RETURN false;
END
$$;

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
            OR NEW.mime_type = 'image/gif' AND (substring(NEW.content FROM 1 FOR 6) = 'GIF87a'::bytea
                                                OR substring(NEW.content FROM 1 FOR 6) = 'GIF89a'::bytea)) THEN
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

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (48, '20261204100000_trovesnap_media_location');

RESET ROLE;
