"""The problems of one import, each 'file:line [field]: message', and the failure that lists them."""

from config.errors import ApplicationError

MAX_PROBLEMS = 20


class ImportFailed(ApplicationError):
    """The file was not imported; `details` lists the problems as 'file:line [field]: message'."""

    code = "import_invalid"


class ProblemLog:
    """Problems in the order they were found, up to MAX_PROBLEMS; once there is one, an import
    writes nothing more and only reads on to report the others."""

    def __init__(self) -> None:
        self.details: list[str] = []

    def add(self, detail: str) -> None:
        if len(self.details) < MAX_PROBLEMS:
            self.details.append(detail)

    @property
    def full(self) -> bool:
        return len(self.details) >= MAX_PROBLEMS

    def __bool__(self) -> bool:
        return bool(self.details)

    def failure(self, filename: str) -> ImportFailed:
        more = "" if len(self.details) < MAX_PROBLEMS else f" (showing the first {MAX_PROBLEMS})"
        return ImportFailed(
            f"{filename} was not imported: {len(self.details)} problem(s){more}; nothing was written.",
            details=list(self.details),
        )
