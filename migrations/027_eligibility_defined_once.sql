-- Eligibility has one definition: app/data/eligibility.py (allows, the allowed audiences,
-- evidence, the lineage walk and its caps) and app/data/lineage.py (the lineage cache, filled
-- by that same walk). These SQL functions were a second copy that requests never ran (every
-- statement inlines the fragments, because a table-reading function cannot run inside a
-- statement Citus routes to one shard), kept equal to the fragments by a test; a fix to them
-- would have changed nothing that is served. They go. schema.sql shows what the database
-- holds after every migration.
drop function recall_lineage_allowed(bigint, bigint[], text, bigint, bigint[]);
drop function recall_cache_lineage(bigint, bigint[], int);
drop function recall_cache_lineage_one_by_one(bigint, bigint[]);
drop function recall_lineage_summary(bigint, bigint[]);
drop function recall_allowed_audiences(bigint, text, bigint, bigint[]);
drop function recall_audience_allows(text, bigint, bigint[], text, bigint, bigint[]);
