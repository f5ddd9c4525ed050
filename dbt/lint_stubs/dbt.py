"""Lint-time stand-in for dbt's cross-database macros (see adapter.py)."""


def type_string() -> str:
    return "varchar"


def split_part(string: str, delimiter: str, part: int) -> str:
    return f"split_part({string}, {delimiter}, {part})"


def dateadd(datepart: str, interval: str, from_date_or_timestamp: str) -> str:
    return f"date_add({from_date_or_timestamp}, interval ({interval}) {datepart})"
