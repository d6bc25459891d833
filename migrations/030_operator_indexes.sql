-- A messageSearch query of operators only (`from:@bob`, `in:#infra`) has no words for the
-- text index to narrow: it lists one author's or one conversation's documents newest first.
-- These read exactly those documents in search order (global_seq is unique per workspace, so
-- it alone is the order), so a page is the first few entries of one index range instead of a
-- walk of the whole workspace or a sort of everything the author ever wrote. `in:` names a
-- conversation with its threads, which share its root_scope_id.
create index search_documents_author_recency
    on search_documents (workspace_id, author_id, global_seq desc);
create index search_documents_root_recency
    on search_documents (workspace_id, root_scope_id, global_seq desc);
