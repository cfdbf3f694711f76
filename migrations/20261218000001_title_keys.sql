-- The keys of a title search: the space and one trigram of the title's words, as one key
-- ("<space> <trigram>"), so that the GIN index over them (the next migration) keeps a
-- posting list per space and trigram. Beside the space in a two-column index
-- (documents_title_trgm_by_space), a search still reads the trigrams' lists of every
-- space: `q=policy` in a space of 10,000 of 1,000,000 documents spent about 2.6 ms in the
-- index; with these keys it reads the space's own lists, 0.07 ms.
-- show_trgm is pg_trgm's: it lower-cases, splits words on what is not a letter or digit,
-- pads each word with blanks and shows a trigram holding a letter beyond ASCII as a hash.
--
-- kh_title_keys, a title's keys: its trigrams but those shown with a padding blank (a
-- hashed one may be padded too; a key more in the index is harmless).
-- kh_title_query_keys, a LIKE pattern's keys: only the trigrams of three letters or digits
-- in a row in it, which every title that contains them holds: each three characters'
-- trigrams less those of their first two and of their last two (of "xyz": "xyz" alone,
-- hashed or not; none when one of the three is not a letter or digit). A padded trigram
-- of the query, as " aß" of "aße", is not one of "Straße"'s. NULL when there is none.
SET LOCAL lock_timeout = '5s';

CREATE FUNCTION kh_title_keys(space text, title text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(space || ' ' || t)
    FROM unnest(public.show_trgm(title)) AS t
    WHERE strpos(t, ' ') = 0
$$;

CREATE FUNCTION kh_title_query_keys(space text, pattern text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(DISTINCT space || ' ' || k)
    FROM generate_series(1, length(pattern) - 2) AS i,
    LATERAL (SELECT unnest(public.show_trgm(substr(pattern, i, 3)))
             EXCEPT SELECT unnest(public.show_trgm(substr(pattern, i, 2)))
             EXCEPT SELECT unnest(public.show_trgm(substr(pattern, i + 1, 2)))) AS w(k)
$$;
