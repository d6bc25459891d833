-- Secrets of this Recall installation, shared by every process on the database. `cursors` keys
-- the sealed cursors (app/search/opaque.py): 32 random bytes, drawn by the first process that
-- needs them (app/data/secrets.py; two processes at once keep the first insert). A reference
-- table on Citus (app/migrate.py).
create table recall_secrets (
    name text primary key,
    value bytea not null check (length(value) = 32)
);
