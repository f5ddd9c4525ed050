"""Lint-time stand-in for dbt's `adapter` (sqlfluff's jinja templater, .sqlfluff library_path).

sqlfluff renders the models with plain Jinja, without dbt. A dispatched macro of
macros/engine.sql renders here as a call of the same name (``utc(end_time)``), which parses as
SQL wherever an expression stands, and a type macro as a type; the real SQL is dbt's to compile.
"""


def quote(identifier: str) -> str:
    return f'"{identifier}"'


def dispatch(name: str, package: str | None = None):
    if name.startswith("type_"):
        return lambda *args: "varchar"
    return lambda *args: f"{name}({', '.join(str(a) for a in args)})"
