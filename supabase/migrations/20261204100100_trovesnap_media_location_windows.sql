-- Migration 49 (issue 16, attack of finding F10). media_location (migration
-- 48) passed over a JPEG's entropy-coded data denser in 0xFF than a
-- photo's 64 KiB at a time with one regular expression, but a run of fill
-- bytes (FF FF) ended the expression's match: entropy-coded data of
-- "FF FF 00" repeated (a fill byte and a stuffed byte, which image/jpeg and
-- StripLocation pass over) cost one 64 KiB window per 3 bytes, and an 8 MiB
-- photo held its request's transaction for minutes; 4000 empty scans after
-- the switch to windows cost 4000 windows of 64 KiB (over a second). The
-- expression now passes over fill bytes before a stuffed byte or an RST
-- marker too, and the window grows from 4 KiB while the data fills it, so
-- a stop costs no more than the bytes passed over since the last one plus
-- 4 KiB. The walk and its answers are migration 48's.
-- internal/live/media_location_f10_attack_test.go holds it.

SET ROLE trovesnap_owner;

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
                IF pl < h + 6 OR trovesnap.media_tiff_location(p, ps + h + 6, pl - h - 6) THEN
                    RETURN true;
                END IF;
            ELSIF trovesnap.media_starts(p, ps, pl, 'http://ns.adobe.com/xap/1.0/\000'::bytea)
                  OR trovesnap.media_starts(p, ps, pl, 'http://ns.adobe.com/xmp/extension/\000'::bytea) THEN
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

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (49, '20261204100100_trovesnap_media_location_windows');

RESET ROLE;
