"""What one sacct call delivered: complete, or the problems that make it be asked again."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WindowReport:
    """What one sacct call delivered: complete, or the problems that make it be asked again."""

    label: str
    start: float | None = None
    problems: list[str] = field(default_factory=list)
    #: what sacct printed on stderr when it exited non-zero (lines joined by " / ")
    said: str = ""
    #: the sacct command line of that call
    command: str = ""

    def fail(self, why: str) -> None:
        self.problems.append(why)

    @property
    def complete(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        return f"{self.label}: {'; '.join(self.problems)}"
