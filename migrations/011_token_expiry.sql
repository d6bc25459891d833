-- Optional token expiry (`recall token ... --ttl`): past `expires_at` a token authenticates no
-- one, checked in the same statement that reads its reader (app/data/readers.py). Null: no
-- expiry, as every token minted before this migration.
alter table tokens add column expires_at timestamptz;
alter table tokens add constraint tokens_expiry_check check (expires_at is null or expires_at > created_at);
