-- Statement-level triggers with transition tables (REFERENCING NEW TABLE) cannot run on Citus:
-- the trigger joins the transition table, a local relation, to distributed tables ("could not
-- run distributed query with complex table expressions"). Their work is the same per row, so
-- they become row-level triggers, which Citus runs on each shard beside its colocated shards
-- (docs/scale.md). Plain PostgreSQL keeps the property the triggers exist for: no write path
-- can forget to index a message or to forget a stale lineage summary.
--
-- A row trigger costs more than one set-based statement, so the one bulk writer, the importer,
-- sets recall.bulk_import for its transaction, which skips these triggers, and does their work
-- itself: one INSERT ... SELECT of every document of the new workspace; and no lineage to forget,
-- because nothing of a workspace that did not exist can be cached (app/fixtures/importer.py).

-- The search sidecar: one document per inserted message (migrations/003, 007, 012).
create function recall_index_inserted_message() returns trigger
language plpgsql
as $$
begin
    insert into search_documents
        (workspace_id, message_id, scope_id, root_scope_id, author_id, global_seq, seq,
         created_at, tsv)
    select new.workspace_id, new.id, new.scope_id, coalesce(s.parent_id, s.id), new.author_id,
           new.global_seq, new.seq, new.created_at, recall_document_tsvector(new.body)
    from scopes s
    where s.workspace_id = new.workspace_id and s.id = new.scope_id
    on conflict (workspace_id, message_id) do update set tsv = excluded.tsv;
    return null;
end
$$;

drop trigger messages_index_insert on messages;
drop function recall_index_inserted_messages();
create trigger messages_index_insert
    after insert on messages
    for each row when (current_setting('recall.bulk_import', true) is distinct from 'on')
    execute function recall_index_inserted_message();

-- The lineage cache (migrations/004): a new provenance edge forgets the cached summaries its
-- message's lineage is part of. A message's edges are written with it, before anything can be
-- built from it or its summary cached, so the usual edge finds nothing to forget; the check
-- below costs one index probe then, instead of a recursive walk per edge.
create function recall_forget_lineage_of_new_edge() returns trigger
language plpgsql
as $$
begin
    if exists (
        select 1 from messages m
        where m.workspace_id = new.workspace_id and m.id = new.message_id
          and m.lineage_audience_ids is not null
    ) or exists (
        select 1 from message_sources s
        where s.workspace_id = new.workspace_id and s.source_message_id = new.message_id
    ) then
        perform recall_forget_lineage(new.workspace_id, array[new.message_id]);
    end if;
    return null;
end
$$;

drop trigger message_sources_forget_lineage on message_sources;
drop trigger message_memory_sources_forget_lineage on message_memory_sources;
drop function recall_forget_lineage_of_new_edges();
create trigger message_sources_forget_lineage
    after insert on message_sources
    for each row when (current_setting('recall.bulk_import', true) is distinct from 'on')
    execute function recall_forget_lineage_of_new_edge();
create trigger message_memory_sources_forget_lineage
    after insert on message_memory_sources
    for each row when (current_setting('recall.bulk_import', true) is distinct from 'on')
    execute function recall_forget_lineage_of_new_edge();

-- The triggers above and those of migrations/004 run on Citus shards, where a SQL-language
-- function with parameters cannot plan a distributed statement ("parameters in SQL functions"
-- are not supported); PL/pgSQL passes them as bound parameters. Same statement as 004's.
create or replace function recall_forget_lineage(p_workspace bigint, p_messages bigint[])
returns void
language plpgsql
as $$
begin
    with recursive affected(id) as (
        select unnest(p_messages)
        union
        select x.message_id
        from affected a
        cross join lateral (  -- an index lookup per node, as in recall_lineage_summary
            select s.message_id from message_sources s
            where s.workspace_id = p_workspace and s.source_message_id = a.id
            offset 0
        ) x
    )
    update messages m set lineage_audience_ids = null, lineage_denied = null
    from affected a
    where m.workspace_id = p_workspace and m.id = a.id and m.lineage_audience_ids is not null;
end
$$;
