-- postReply(clientMutationId:): a runtime that retries a reply it posted but whose answer it
-- never received must not post it twice. The first delivery of each (turn, client id) is
-- remembered with the reply it wrote; a retry with the same id answers that reply again.
create table turn_replies (
    workspace_id bigint not null,
    turn_id bigint not null,
    client_mutation_id text not null check (client_mutation_id <> ''),
    message_id bigint not null,
    primary key (workspace_id, turn_id, client_mutation_id),
    foreign key (workspace_id, turn_id) references turns (workspace_id, id) on delete cascade,
    foreign key (workspace_id, message_id) references messages (workspace_id, id) on delete cascade
);
