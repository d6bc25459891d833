"""Every part of the schema a frontend developer meets in the explorer has a description: each
type, field, argument, input field, enum value and directive argument of our own (built-in
scalars, introspection types and the spec's directives excluded)."""

from __future__ import annotations

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    build_schema,
    introspection_types,
    specified_scalar_types,
)

from app.api.schema import schema


def _described(text: str | None) -> bool:
    return bool(text and text.strip())


def undescribed(graphql_schema: GraphQLSchema) -> list[str]:
    """Schema coordinates (`Type`, `Type.field`, `Type.field(arg:)`, `Enum.VALUE`) that have no
    description, sorted."""
    missing: list[str] = []
    for name, named in graphql_schema.type_map.items():
        if name in introspection_types or name in specified_scalar_types:
            continue
        missing += _undescribed_in(named)
    return sorted(missing)


def _undescribed_in(named: GraphQLNamedType) -> list[str]:
    name = named.name
    missing = [] if _described(named.description) else [name]
    if isinstance(named, GraphQLObjectType | GraphQLInterfaceType):
        for field_name, field in named.fields.items():
            if not _described(field.description):
                missing.append(f"{name}.{field_name}")
            missing += [
                f"{name}.{field_name}({arg_name}:)"
                for arg_name, arg in field.args.items()
                if not _described(arg.description)
            ]
    elif isinstance(named, GraphQLInputObjectType):
        missing += [
            f"{name}.{field_name}"
            for field_name, field in named.fields.items()
            if not _described(field.description)
        ]
    elif isinstance(named, GraphQLEnumType):
        missing += [
            f"{name}.{value_name}"
            for value_name, value in named.values.items()
            if not _described(value.description)
        ]
    elif isinstance(named, GraphQLUnionType):
        pass  # members are object types, checked on their own
    return missing


def test_every_type_field_argument_and_enum_value_is_described() -> None:
    missing = undescribed(schema._schema)
    assert not missing, "described nowhere in the schema (add a description):\n  " + "\n  ".join(
        missing
    )


def test_the_check_finds_what_is_missing() -> None:
    """The check itself: a schema with one undescribed part of each kind names each of them,
    and nothing described."""
    sdl = """
        "Q" type Query { "f" f(a: Int, "b" b: Int): E  g(i: I): T  u: U }
        enum E { "X" X Y }
        input I { "x" x: Int y: Int }
        "U" union U = T
        type T { "t" t: S }
        scalar S
    """
    assert undescribed(build_schema(sdl)) == [
        "E",
        "E.Y",
        "I",
        "I.y",
        "Query.f(a:)",
        "Query.g",
        "Query.g(i:)",
        "Query.u",
        "S",
        "T",
    ]
