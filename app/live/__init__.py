"""Live push (docs/live.md): the GraphQL subscriptions' domain. `hub` is one process's LISTEN
connection, its subscribers and their limits; `updates` is one subscription's loop, which
decides every event in SQL for its reader (app.data.live_admission)."""
