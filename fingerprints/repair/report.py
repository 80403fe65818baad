"""What repair suggestions come to: the rules kept (with their values on the sample) and
the ones discarded with the reason, as a markdown artifact's table and a Slack block."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fingerprints.repair.rules import Rule

VALUE_SNIPPET = 80


@dataclass(frozen=True)
class Repair:
    """A rule that yielded a valid value for ``field`` on every sample page."""

    page_type: str
    field: str
    old_rule: str | None
    rule: Rule
    values: tuple[tuple[str, Any], ...]  # (page URL, validated value)
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "page_type": self.page_type,
            "field": self.field,
            "old_rule": self.old_rule,
            "new_rule": str(self.rule),
            "rule": {
                "kind": self.rule.kind,
                "selector": self.rule.selector,
                "path": self.rule.path,
            },
            "values": [{"url": url, "value": value} for url, value in self.values],
            "why": self.why,
        }


@dataclass(frozen=True)
class Discarded:
    """A suggestion validation refused, and why."""

    page_type: str
    field: str
    rule: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "page_type": self.page_type,
            "field": self.field,
            "rule": self.rule,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class RepairReport:
    site: str
    model: str | None = None
    kept: tuple[Repair, ...] = ()
    discarded: tuple[Discarded, ...] = ()
    skipped: str | None = None  # why nothing was asked (no endpoint, no pages)
    errors: tuple[str, ...] = ()  # requests that failed (no secrets in them)

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "model": self.model,
            "kept": [repair.to_dict() for repair in self.kept],
            "discarded": [entry.to_dict() for entry in self.discarded],
            "skipped": self.skipped,
            "errors": list(self.errors),
        }

    def markdown(self) -> str:
        """The report artifact's section: kept repairs as a table, then the discarded."""
        lines = [f"## Repair suggestions for {self.site}", ""]
        if self.skipped:
            return "\n".join([*lines, f"Not asked: {self.skipped}."])
        lines.append(
            f"Suggested by `{self.model}`, each run on every sample page and validated "
            "against the item schema. Review before changing the spider."
        )
        lines.append("")
        if self.kept:
            lines += [
                "| page type | field | old rule | new rule | values on the sample |",
                "|---|---|---|---|---|",
            ]
            for repair in self.kept:
                values = "; ".join(value_text(value) for _, value in repair.values)
                lines.append(
                    f"| {repair.page_type} | {repair.field} | {_cell(repair.old_rule or '-')} "
                    f"| {_cell(str(repair.rule))} | {_cell(values)} |"
                )
        else:
            lines.append("No suggestion yielded valid values on the sample.")
        if self.discarded:
            lines += ["", "Discarded:", ""]
            lines += [
                f"- {entry.page_type}.{entry.field} `{entry.rule}`: {entry.reason}"
                for entry in self.discarded
            ]
        if self.errors:
            lines += ["", "Errors:", ""] + [f"- {error}" for error in self.errors]
        return "\n".join(lines)


def value_text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= VALUE_SNIPPET else text[: VALUE_SNIPPET - 3] + "..."


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
