"""messageSearch, the Messages tab's search: the request sequence (message_search), its query
parsing, paging, cursors and highlights, and the readiness gate both search surfaces share
(the statements are in app.data)."""
