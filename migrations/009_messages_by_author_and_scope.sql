-- historySearch's requester_spoke feature asks, for each conversation of its ranked pool, "did
-- the requester write anything here?". messages_author (workspace_id, author_id, global_seq)
-- could not answer that without reading the requester's messages, and the per-scope index read
-- a whole scope when the answer was no (~2.5 ms of a 17 ms search at 1M messages). Nothing
-- reads messages by author in global_seq order (messageSearch filters authors on the sidecar),
-- so the index is replaced rather than added to: imports maintain the same number of indexes.

drop index messages_author;
create index messages_author_scope on messages (workspace_id, author_id, scope_id);
