"""What a sync pass or chunk did (crowd.work.sync): counts, errors, and the campaigns and
topics whose HITs were synced; a chunk's report travels as a dict from a Celery worker."""

from dataclasses import asdict, dataclass, field, fields


@dataclass
class SyncReport:
    hits: int = 0
    verified: int = 0
    recovered: int = 0
    unverified: int = 0
    invalid: int = 0  # marketplace copies that are not a valid answer to their task
    approved: int = 0
    completed: int = 0
    chunks_shared: int = 0  # chunks of the pass that Celery workers did (crowd.work.chunks)
    errors: list[str] = field(default_factory=list)
    campaign_ids: set[int] = field(default_factory=set)  # campaigns whose HITs were synced
    topic_ids: set[int] = field(default_factory=set)

    def add(self, other: "SyncReport") -> None:
        counts = ("hits", "verified", "recovered", "unverified", "invalid", "approved", "completed", "chunks_shared")
        for name in counts:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors += other.errors
        self.campaign_ids |= other.campaign_ids
        self.topic_ids |= other.topic_ids

    def as_dict(self) -> dict:
        summary = asdict(self)
        summary["campaign_ids"], summary["topic_ids"] = sorted(self.campaign_ids), sorted(self.topic_ids)
        return summary

    @classmethod
    def from_dict(cls, data: dict) -> "SyncReport":
        values = {item.name: data[item.name] for item in fields(cls) if item.name in data}
        return cls(**{**values, "campaign_ids": set(data["campaign_ids"]), "topic_ids": set(data["topic_ids"])})
