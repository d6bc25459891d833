-- messageSearch resolves the values people type in operators (`from:@Ben`, `in:#"Infra Team"`)
-- by key or display name regardless of case (app/data/query_names.py). A workspace has
-- thousands of people and tens of thousands of conversations (threads are conversations too):
-- these make each lookup a few index probes instead of a scan of every actor or scope.
create index actors_lower_key on actors (workspace_id, lower(key));
create index actors_lower_name on actors (workspace_id, lower(name));
create index scopes_lower_key on scopes (workspace_id, lower(key));
create index scopes_lower_name on scopes (workspace_id, lower(name)) where name is not null;
