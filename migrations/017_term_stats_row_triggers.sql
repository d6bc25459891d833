-- The term statistics of migration 014 are kept by statement-level triggers with transition
-- tables on search_documents, which cannot run on Citus shards ("executor could not find named
-- tuplestore"; docs/scale.md). Like migration 016 did for the search sidecar and the lineage
-- cache, they become row-level triggers that do the same arithmetic per document: +1 per
-- lexeme of an inserted document, -1 per lexeme of a deleted one, the difference for an
-- updated one, and the corpus totals with them. The counts stay exact in the writing
-- transaction, on plain PostgreSQL and on Citus alike.
--
-- Every statement names its workspace as `workspace_id = <the row's workspace>` on the table it
-- touches, so on Citus it runs on the shard of the document's own shard group.
--
-- The one bulk writer, the importer, sets recall.bulk_import for its transaction, which skips
-- these triggers as it skips 016's; it writes the statistics of its new workspace set-based
-- itself, from the documents it indexed (app/fixtures/importer.py), rows identical to what
-- these triggers would have written.

create function recall_count_inserted_document() returns trigger
language plpgsql
as $$
begin
    -- Upserted in lexeme order (as 014 did): two writers of a workspace already queue on its
    -- row lock (app/data/changes.py), and one order rules out a deadlock regardless.
    insert into search_term_stats as s (workspace_id, lexeme, documents)
    select new.workspace_id, l.lexeme, 1
    from unnest(tsvector_to_array(new.tsv)) as l(lexeme)
    order by l.lexeme
    on conflict (workspace_id, lexeme) do update set documents = s.documents + 1;
    insert into search_corpus_stats as c (workspace_id, documents, lexemes)
    select new.workspace_id, 1, length(new.tsv)
    on conflict (workspace_id) do update
        set documents = c.documents + 1, lexemes = c.lexemes + excluded.lexemes;
    return null;
end
$$;

create function recall_count_deleted_document() returns trigger
language plpgsql
as $$
begin
    update search_term_stats s set documents = s.documents - 1
    where s.workspace_id = old.workspace_id
      and s.lexeme = any(tsvector_to_array(old.tsv));
    update search_corpus_stats c
    set documents = c.documents - 1, lexemes = c.lexemes - length(old.tsv)
    where c.workspace_id = old.workspace_id;
    return null;
end
$$;

-- Only the lexemes the update added or removed change; a document's workspace never changes.
create function recall_count_updated_document() returns trigger
language plpgsql
as $$
begin
    insert into search_term_stats as s (workspace_id, lexeme, documents)
    select new.workspace_id, x.lexeme, sum(x.d)::int
    from (
        select l.lexeme, 1 as d from unnest(tsvector_to_array(new.tsv)) as l(lexeme)
        union all
        select l.lexeme, -1 from unnest(tsvector_to_array(old.tsv)) as l(lexeme)
    ) x
    group by x.lexeme having sum(x.d) <> 0
    order by x.lexeme
    on conflict (workspace_id, lexeme) do update set documents = s.documents + excluded.documents;
    update search_corpus_stats c set lexemes = c.lexemes + length(new.tsv) - length(old.tsv)
    where c.workspace_id = new.workspace_id;
    return null;
end
$$;

-- Each trigger statement as its own EXECUTE: Citus forwards DROP and CREATE TRIGGER of a
-- distributed table to its shards as the text they came in, and a migration file is many
-- statements in one string ("cannot insert multiple commands into a prepared statement").
do $$
begin
    execute 'drop trigger search_documents_count_insert on search_documents';
    execute 'drop trigger search_documents_count_delete on search_documents';
    execute 'drop trigger search_documents_count_update on search_documents';
    execute $t$
        create trigger search_documents_count_insert
            after insert on search_documents
            for each row when (current_setting('recall.bulk_import', true) is distinct from 'on')
            execute function recall_count_inserted_document()
    $t$;
    execute $t$
        create trigger search_documents_count_delete
            after delete on search_documents
            for each row when (current_setting('recall.bulk_import', true) is distinct from 'on')
            execute function recall_count_deleted_document()
    $t$;
    execute $t$
        create trigger search_documents_count_update
            after update of tsv on search_documents
            for each row when (current_setting('recall.bulk_import', true) is distinct from 'on'
                               and old.tsv is distinct from new.tsv)
            execute function recall_count_updated_document()
    $t$;
end
$$;

drop function recall_count_inserted_documents();
drop function recall_count_deleted_documents();
drop function recall_count_updated_documents();
