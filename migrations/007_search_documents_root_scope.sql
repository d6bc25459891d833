-- historySearch narrows the sidecar to the agent's perspective before it touches a message
-- row. A perspective is a set of conversations (channels and DMs the agent is a member of; a
-- thread belongs to its parent's), so each document carries its conversation: the root scope.
-- Filtering documents by the agent's ~100 conversations (a constant array the planner can
-- estimate) replaces a filter over its ~2,500 scopes (threads included) that had to be computed
-- per statement and that the planner could not estimate, which made it sort every match of a
-- common term (1.4 s at 1M messages) instead of walking the newest ones.
--
-- Like scope_id, the copy only narrows the scan; the canonical message row's scope decides the
-- perspective (app/data/history_search.py). A scope's parent never changes, so the copy cannot
-- go stale.

alter table search_documents add column root_scope_id bigint;

update search_documents d set root_scope_id = coalesce(s.parent_id, s.id)
from scopes s
where s.workspace_id = d.workspace_id and s.id = d.scope_id;

alter table search_documents alter column root_scope_id set not null;

create or replace function recall_index_inserted_messages() returns trigger
language plpgsql
as $$
begin
    insert into search_documents
        (workspace_id, message_id, scope_id, root_scope_id, author_id, global_seq, seq, tsv)
    select n.workspace_id, n.id, n.scope_id, coalesce(s.parent_id, s.id), n.author_id,
           n.global_seq, n.seq, recall_document_tsvector(n.body)
    from inserted n
    join scopes s on s.workspace_id = n.workspace_id and s.id = n.scope_id
    on conflict (workspace_id, message_id) do update set tsv = excluded.tsv;
    return null;
end
$$;

create or replace function recall_index_updated_message() returns trigger
language plpgsql
as $$
begin
    insert into search_documents
        (workspace_id, message_id, scope_id, root_scope_id, author_id, global_seq, seq, tsv)
    select new.workspace_id, new.id, new.scope_id, coalesce(s.parent_id, s.id), new.author_id,
           new.global_seq, new.seq, recall_document_tsvector(new.body)
    from scopes s
    where s.workspace_id = new.workspace_id and s.id = new.scope_id
    on conflict (workspace_id, message_id) do update set tsv = excluded.tsv;
    return null;
end
$$;

-- The GIN index's pending list (fastupdate) is scanned in full by every search until it is
-- merged. At the default 4 MB that was ~6 ms per search after a bulk load (16k pending
-- entries) even for a term with ten matches; 256 kB bounds it to a fraction of a millisecond,
-- at the price of merging more often while writing.
alter index search_documents_tsv set (gin_pending_list_limit = 256);
