-- A deleted message keeps its text until the chunked removal right after its batch reaches it
-- (app/data/deletions.py; migrations/023 indexes the pending ones): `deleted` alone hides it
-- from every surface. One command in this file (migrations/020 says why).
alter table messages drop constraint messages_deleted_body_check;
