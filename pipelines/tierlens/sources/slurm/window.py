"""What one sacct call delivered: complete, or the problems that make it be asked again."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...records import RecordKind, Reject

#: What to do about a line or job of sacct's own output that tierlens cannot read (a reject's reason).
SACCT_VALUE = (
    "run the sacct command of this reject's source by hand for the job; if sacct prints it so, "
    "report the Slurm version and the line (raw_record) to tierlens"
)


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


def output_broke_off(
    report: WindowReport | None, problem: str, source: str, location: str, field: str, reason: str, raw: str
) -> Reject:
    """The reject for where sacct's output broke off (slurmdbd or sacct stopped, a timeout, a full
    disk), with the window's report told of it: a window whose output is cut short is incomplete,
    so it is asked for again on the next run, while the jobs read before the cut are loaded."""
    if report is not None:
        report.fail(problem)
    return Reject(RecordKind.JOB, source, location, field, reason, raw)
