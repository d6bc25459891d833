-- The messages whose lineage summary is missing (migrations/004: the cache can be missing,
-- never stale), normally none: every write that forgets a summary fills it again in its own
-- transaction. The token's statement probes this index once per request; when it holds nothing
-- for the workspace, the request's search statements leave the live lineage walk out of their
-- SQL and deny a missing summary instead (fail closed; app.data.eligibility.lineage_allows),
-- which saves a messageSearch ~1.5 ms of planning and executor set-up and a historySearch ~4
-- (docs/performance.md). One command in this file: on a database already distributed, Citus
-- propagates a CREATE INDEX from a file of several commands as a prepared statement, which fails.
create index messages_lineage_missing on messages (workspace_id)
    where has_provenance and lineage_audience_ids is null;
