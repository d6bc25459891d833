-- Term statistics folded once per statement, and a bounded document vector.
--
-- Migration 017's row triggers upsert one search_term_stats row per lexeme of every document
-- (and the workspace's one search_corpus_stats row) as each document is written. Within one
-- transaction every upsert of a row already updated by that transaction adds a row version
-- that the next one must walk past: a batch of posts sharing common words updated the same
-- rows hundreds of times, so a batch's cost grew with its length times its documents'
-- lexemes (1,000 posts of 1 KB took 2.8x longer as one batch than as 100 of 10; 100 KB posts
-- applied at 1.4 a second). The live writers of many documents at once (a run of posts, the
-- removal of deleted messages' documents: app/data/term_stats.py) now set
-- recall.term_stats = 'deferred' around their statement, which these triggers then skip, and
-- add up the statement's documents themselves: one upsert per distinct lexeme. Every other
-- write (an edit, a single document) still counts through the triggers.
-- The function first: on Citus its replacement is propagated to the workers, which it may not
-- be after the trigger commands ran on the shards in parallel in this transaction.
-- The document vector of a body's first 100,000 characters (docs/fixtures.md, Long bodies).
-- PostgreSQL keeps word positions only up to 16,383 (about 100,000 characters of prose; later
-- words all share the last position) and refuses a vector over 1 MB, which a body of a few MB
-- of distinct words reaches: an error that would fail the whole batch. Words past the limit
-- are not found by search; the body itself is stored and shown whole. Otherwise as migration
-- 018's.
create or replace function recall_document_tsvector(body text) returns tsvector
language plpgsql immutable parallel safe
as $$
declare
    v tsvector;
begin
    body := left(body, 100000);
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

do $$
begin
    execute 'drop trigger search_documents_count_insert on search_documents';
    execute 'drop trigger search_documents_count_delete on search_documents';
    execute 'drop trigger search_documents_count_update on search_documents';
    execute $t$
        create trigger search_documents_count_insert
            after insert on search_documents
            for each row when (current_setting('recall.bulk_import', true) is distinct from 'on'
                               and current_setting('recall.term_stats', true)
                                   is distinct from 'deferred')
            execute function recall_count_inserted_document()
    $t$;
    execute $t$
        create trigger search_documents_count_delete
            after delete on search_documents
            for each row when (current_setting('recall.bulk_import', true) is distinct from 'on'
                               and current_setting('recall.term_stats', true)
                                   is distinct from 'deferred')
            execute function recall_count_deleted_document()
    $t$;
    execute $t$
        create trigger search_documents_count_update
            after update of tsv on search_documents
            for each row when (current_setting('recall.bulk_import', true) is distinct from 'on'
                               and current_setting('recall.term_stats', true)
                                   is distinct from 'deferred'
                               and old.tsv is distinct from new.tsv)
            execute function recall_count_updated_document()
    $t$;
end
$$;
