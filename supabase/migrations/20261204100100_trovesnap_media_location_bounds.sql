-- Migration 49 (issue 16, attack of finding F10): media_location's bounds.
-- media_location (migration 48) passed over a JPEG's entropy-coded data
-- denser in 0xFF than a photo's 64 KiB at a time with one regular expression, but a run of fill
-- bytes (FF FF) ended the expression's match: entropy-coded data of
-- "FF FF 00" repeated (a fill byte and a stuffed byte, which image/jpeg and
-- StripLocation pass over) cost one 64 KiB window per 3 bytes, and an 8 MiB
-- photo held its request's transaction for minutes; 4000 empty scans after
-- the switch to windows cost 4000 windows of 64 KiB (over a second). The
-- expression now passes over fill bytes before a stuffed byte or an RST
-- marker too, and the window grows from 4 KiB while the data fills it, so
-- a stop costs no more than the bytes passed over since the last one plus
-- 4 KiB.
--
-- IFDs may overlap (nothing refuses it when there is no location to
-- remove), so one 12 KiB Exif segment held 16 IFDs of 1024 entries each,
-- and an 8 MiB photo some ten million entries for the plpgsql loop (9 s).
-- StripLocation now reads at most maxExifEntries (16384) IFDs and IFD
-- entries in all of a JPEG's Exif segments (4096 segments of 16 empty
-- IFDs were 65k IFDs) and drops a segment that would read more,
-- like any it cannot parse safely; media_tiff_entries keeps the count, and
-- its queue of IFDs is read by index (a slice copied the whole queue at
-- each step).
--
-- StripLocation removed an APP1 segment only with an XMP header exactly;
-- ExifTool also reads as XMP an APP1 whose payload starts "http" or holds
-- "<exif:" (and FLIR and Parrot APP1 records hold GPS): both now remove
-- every APP1 segment that is not Exif. Otherwise the walk and its answers
-- are migration 48's.
-- internal/live/media_location_f10_attack_test.go holds it.

SET ROLE trovesnap_owner;

-- The TIFF structure of an Exif segment (tl bytes at offset t0), as
-- media_tiff_location (migration 48) walked it, with at most budget IFDs
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

CREATE OR REPLACE FUNCTION trovesnap.media_jpeg_location(p bytea) RETURNS boolean
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

DROP FUNCTION trovesnap.media_tiff_location(bytea, bigint, bigint);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (49, '20261204100100_trovesnap_media_location_bounds');

RESET ROLE;
