"""The messageSearch area: the Messages tab's search and its readiness status."""
