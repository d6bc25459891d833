-- Lookups that start from a global value route to one workspace (docs/design.md, Scale;
-- docs/scale.md). On Citus every table is distributed by workspace_id, and a unique key that
-- does not include it cannot be enforced, nor can a lookup by it go to one shard:
--
--   * a workspace key is resolved through workspace_keys, a small table that Citus keeps as a
--     reference table (a copy on every node), so `where key = $1` never fans out and the key
--     stays unique across the cluster. The importer writes it with the workspace;
--   * a token carries its workspace (`rcm_w<workspace id>.<random>`, app/data/tokens.py), so its
--     lookup is `workspace_id = $1 and token_hash = $2`: this index answers it. Tokens minted
--     before this migration have no workspace in them and are looked up by hash alone (on Citus
--     that visits every shard: reissue them).
--
-- On plain PostgreSQL the old unique keys (workspaces.key, tokens.token_hash) stay; `recall
-- migrate` drops them only when it distributes the tables (app/migrate.py).

create table workspace_keys (
    key text primary key check (key <> ''),
    workspace_id bigint not null unique
);
insert into workspace_keys (key, workspace_id) select key, id from workspaces;

create unique index tokens_workspace_hash on tokens (workspace_id, token_hash);
