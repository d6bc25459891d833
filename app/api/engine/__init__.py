"""The engine: where Recall runs on strawberry-graphql's and graphql-core's internals, and the
only place that may.

Why it exists: completing a page of 20 messageSearch hits (~270 fields) through graphql-core's
own execution costs ~1 ms more of the gateway's CPU per request than the fast path in
`completion` (docs/performance.md, The forked executor: measured and kept). Everything else in
app/api uses the libraries' public API.

What it reads that the libraries do not promise to keep, and why:

graphql-core (execution internals, app/api/engine/completion.py):
- `ExecutionContext.execute_fields`, `execute_field`, `complete_value`: overridden, to answer
  plain data inline and hand everything else back to them (their parameter lists are checked);
- `build_per_event_executor`: overridden, so that each subscription event's executor has its
  own memos (`_relevant_sub_fields`, `_stream_usages`, replaced): graphql-core's shallow copy
  shared them across events, keyed by field lists collected anew for each, and they grew for
  the subscription's whole life;
- `collect_subfields`, `handle_field_error`, `settle_in_background`, `get_stream_usage`,
  `is_awaitable`, `middleware_manager`: called or read, as graphql-core's own completion does;
- `graphql.pyutils.Path` and `gather_with_cancel`: a field's path and the gathering of the
  awaitable fields or items, as graphql-core builds and gathers them;
- `GraphQLScalarType.coerce_input_value` / `coerce_input_literal` (app/api/scalars.py, strict
  ID and String input): replaced on the two built-in scalars.

strawberry-graphql:
- `StrawberryGraphQLCoreExecutionContext` (strawberry.schema.schema): the base class;
- `GraphQLCoreConverter.DEFINITION_BACKREF` (strawberry.schema.schema_converter): the key under
  which a graphql-core field carries its StrawberryField (the fast path; app/api/policies.py's
  per-field policies);
- a default resolver's `_is_default` mark, `StrawberryField.default_resolver is getattr`,
  `base_resolver.wrapped_func`: which fields are plain reads of an attribute;
- the generated `is_type_of` (`_get_is_type_of.<locals>.is_type_of`): an isinstance check that
  ignores its info, recognised by name;
- `ExecutionContext._provided_operation_name` (app/api/limits.py, through
  `provided_operation_name`): the operation name the client sent, before strawberry's fallback;
- `Info._raw_info` (app/api/context.py's `selects`, through `resolve_info`): graphql-core's
  resolve info, whose field nodes, fragments and variables say whether a sub-field is asked
  for without strawberry's `selected_fields` building the whole selection first.

`internals` checks all of it when the schema is built (`recall serve` refuses to start on a
library that changed) and names the versions tested; pyproject.toml pins both libraries to
those versions. To upgrade: move the pins and `internals.TESTED` together and run
tests/api/test_engine_internals.py and tests/api/test_engine_completion.py (the fast path against
graphql-core's own execution, result by result).
"""
