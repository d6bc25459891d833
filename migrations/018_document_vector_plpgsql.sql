-- The document vector as PL/pgSQL (same output as migrations/014's SQL function).
--
-- A SQL-language function whose body has a sub-select is never inlined: every call builds and
-- tears down an executor for its body, which made recall_document_tsvector cost 3.4x a plain
-- to_tsvector and the largest part of an import (docs/performance.md, Import). PL/pgSQL plans
-- its statements once per session and evaluates simple expressions on a fast path; the helper
-- functions it calls (recall_without_cjk, recall_cjk_runs, recall_identifiers,
-- recall_identifier_words) are plain SQL that the planner inlines. It also runs from the row
-- triggers on Citus shards, where SQL functions with parameters cannot plan (docs/scale.md).
create or replace function recall_document_tsvector(body text) returns tsvector
language plpgsql immutable parallel safe
as $$
declare
    v tsvector;
begin
    -- Most messages have no CJK text and no identifier: one cheap regex test each spares them
    -- the passes that would find nothing.
    if body !~ '[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]' then
        v := to_tsvector('english', body);
    else
        v := to_tsvector('english', recall_without_cjk(body))
            || to_tsvector('simple', coalesce(
                (select string_agg(recall_bigrams(r), ' ') from recall_cjk_runs(body) as r), ''));
    end if;
    if body ~ '[A-Za-z0-9][._/][A-Za-z0-9]' then
        -- recall_identifier_tsvector(body), inlined: each identifier whole, then its parts.
        v := v || coalesce(
            (select array_to_tsvector(array_agg(i))
                    || to_tsvector('english', 'the ' || string_agg(recall_identifier_words(i), ' '))
             from recall_identifiers(body) as i),
            ''::tsvector);
    end if;
    return v;
end
$$;
