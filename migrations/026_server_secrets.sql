-- Secrets of this Recall installation, shared by every process on the database. `cursors` keys
-- the sealed cursors (app/search/opaque.py): 32 bytes from PostgreSQL's strong random source
-- (gen_random_uuid; two UUIDs, 244 random bits). A reference table on Citus (app/migrate.py).
create table recall_secrets (
    name text primary key,
    value bytea not null check (length(value) = 32)
);
insert into recall_secrets (name, value)
select 'cursors', uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid());
