-- Deleted messages whose text and search document are still to be removed (app/data/erasure.py):
-- a deletion hides a message at once, in the batch that deletes it (`deleted`, which every
-- surface's evidence rule reads), and its text goes in bounded chunks right after, so erasing
-- a person's thousands of long messages never holds one statement or one transaction for
-- long. Normally empty. One command in this file (migrations/020 says why).
create index messages_text_pending_removal on messages (workspace_id, id)
    where deleted and body <> '';
