"""The Kibana dashboard "Scraping platform" and its Lens visualizations, as saved objects
(Kibana 8.x format: ``coreMigrationVersion`` 8.8.0 plus each type's version; Kibana 9
migrates them on import). ``orchestration.kibana_objects`` renders them with the data
views and the per-site saved searches.
"""

from __future__ import annotations

import json
from typing import Any

CORE_MIGRATION_VERSION = "8.8.0"
TYPE_MIGRATION_VERSIONS = {
    "index-pattern": "8.0.0",
    "lens": "8.9.0",
    "search": "10.5.0",
    "dashboard": "8.7.0",
}

LAYER = "layer1"


def saved_object(
    kind: str, object_id: str, attributes: dict[str, Any], references: list[dict[str, str]]
) -> dict[str, Any]:
    return {
        "type": kind,
        "id": object_id,
        "attributes": attributes,
        "references": references,
        "coreMigrationVersion": CORE_MIGRATION_VERSION,
        "typeMigrationVersion": TYPE_MIGRATION_VERSIONS[kind],
        "managed": False,
    }


# -- Lens columns ---------------------------------------------------------------------------


def date_histogram(field: str, label: str, interval: str = "auto") -> dict[str, Any]:
    return {
        "label": label,
        "customLabel": True,
        "dataType": "date",
        "operationType": "date_histogram",
        "sourceField": field,
        "isBucketed": True,
        "scale": "interval",
        "params": {"interval": interval, "includeEmptyRows": True, "dropPartials": False},
    }


def terms(field: str, label: str, size: int, order_by: dict[str, Any]) -> dict[str, Any]:
    return {
        "label": label,
        "customLabel": True,
        "dataType": "string",
        "operationType": "terms",
        "sourceField": field,
        "isBucketed": True,
        "scale": "ordinal",
        "params": {
            "size": size,
            "orderBy": order_by,
            "orderDirection": "desc",
            "otherBucket": True,
            "missingBucket": False,
            "parentFormat": {"id": "terms"},
            "include": [],
            "exclude": [],
            "includeIsRegex": False,
            "excludeIsRegex": False,
        },
    }


def metric(operation: str, field: str, label: str, data_type: str = "number") -> dict[str, Any]:
    column: dict[str, Any] = {
        "label": label,
        "customLabel": True,
        "dataType": data_type,
        "operationType": operation,
        "isBucketed": False,
        "scale": "ratio",
    }
    if operation == "count":
        column["sourceField"] = "___records___"
    else:
        column["sourceField"] = field
    if operation in ("count", "sum"):
        column["params"] = {"emptyAsNull": True}
    return column


def by_column(column_id: str) -> dict[str, Any]:
    return {"type": "column", "columnId": column_id}


def lens(
    object_id: str,
    title: str,
    description: str,
    data_view_id: str,
    columns: dict[str, dict[str, Any]],
    visualization_type: str,
    visualization: dict[str, Any],
    query: str = "",
) -> dict[str, Any]:
    state = {
        "visualization": visualization,
        "query": {"query": query, "language": "kuery"},
        "filters": [],
        "datasourceStates": {
            "formBased": {
                "layers": {
                    LAYER: {
                        "columns": columns,
                        "columnOrder": list(columns),
                        "incompleteColumns": {},
                        "sampling": 1,
                    }
                }
            }
        },
        "internalReferences": [],
        "adHocDataViews": {},
    }
    attributes = {
        "title": title,
        "description": description,
        "visualizationType": visualization_type,
        "state": state,
    }
    references = [
        {
            "type": "index-pattern",
            "id": data_view_id,
            "name": f"indexpattern-datasource-layer-{LAYER}",
        }
    ]
    return saved_object("lens", object_id, attributes, references)


def xy(
    series: str, x: str, accessors: list[str], split: str | None = None, legend: bool = True
) -> dict[str, Any]:
    layer: dict[str, Any] = {
        "layerId": LAYER,
        "layerType": "data",
        "seriesType": series,
        "xAccessor": x,
        "accessors": accessors,
        "position": "top",
        "showGridlines": False,
    }
    if split:
        layer["splitAccessor"] = split
    return {
        "legend": {"isVisible": legend, "position": "right"},
        "valueLabels": "hide",
        "fittingFunction": "None",
        "preferredSeriesType": series,
        "layers": [layer],
    }


def over_time(
    object_id: str,
    title: str,
    description: str,
    data_view_id: str,
    *,
    time: dict[str, Any],
    value: tuple[str, dict[str, Any]],
    split: tuple[str, str, str],
    series: str = "bar_stacked",
) -> dict[str, Any]:
    """The dashboard's usual panel: one value over time (column ``day``), one series per
    value of a keyword field (its 10 largest by that value)."""
    value_id, value_column = value
    split_id, split_field, split_label = split
    columns = {
        "day": time,
        value_id: value_column,
        split_id: terms(split_field, split_label, 10, by_column(value_id)),
    }
    return lens(
        object_id,
        title,
        description,
        data_view_id,
        columns,
        "lnsXY",
        xy(series, "day", [value_id], split_id),
    )


def visualizations() -> list[dict[str, Any]]:
    jobs = "platform-jobs"
    per_day = "1d"
    by_site = ("site", "site", "Site")
    return [
        over_time(
            "platform-lens-items-per-site-day",
            "Items scraped per site per day",
            "Sum of each job's items_scraped, by the day the job finished.",
            jobs,
            time=date_histogram("finished_at", "Day", per_day),
            value=("items", metric("sum", "items_scraped", "Items scraped")),
            split=by_site,
        ),
        over_time(
            "platform-lens-items-stored-per-site-day",
            "Items in the store per site, by last seen",
            "Item documents (items-*) by the day they were last crawled.",
            "platform-items",
            time=date_histogram("last_seen", "Day last seen", per_day),
            value=("items", metric("count", "", "Items")),
            split=by_site,
        ),
        lens(
            "platform-lens-new-changed-per-job",
            "New and changed items per job",
            "The latest jobs: items new and changed (dedup verdicts), status and duration.",
            jobs,
            {
                "job": terms("job_id", "Job", 50, by_column("finished")),
                "site": terms("site", "Site", 1, by_column("finished")),
                "finished": metric("max", "finished_at", "Finished", "date"),
                "new": metric("sum", "items_new", "New"),
                "changed": metric("sum", "items_changed", "Changed"),
                "unchanged": metric("sum", "items_unchanged", "Unchanged"),
            },
            "lnsDatatable",
            {
                "layerId": LAYER,
                "layerType": "data",
                "columns": [
                    {"columnId": column, "isTransposed": False}
                    for column in ("job", "site", "finished", "new", "changed", "unchanged")
                ],
                "sorting": {"columnId": "finished", "direction": "desc"},
            },
        ),
        over_time(
            "platform-lens-block-rate",
            "Block rate per site over time",
            "Average of each job's block_rate (blocked responses / responses).",
            jobs,
            time=date_histogram("finished_at", "Job finished"),
            value=("rate", metric("average", "block_rate", "Block rate")),
            split=by_site,
            series="line",
        ),
        over_time(
            "platform-lens-job-durations",
            "Job durations per site",
            "Longest job duration (seconds) per site and time bucket.",
            jobs,
            time=date_histogram("finished_at", "Job finished"),
            value=("duration", metric("max", "duration_seconds", "Duration (s)")),
            split=by_site,
            series="bar",
        ),
        over_time(
            "platform-lens-job-statuses",
            "Job statuses",
            "Jobs by final status (completed, failed, ...).",
            jobs,
            time=date_histogram("finished_at", "Job finished"),
            value=("jobs", metric("count", "", "Jobs")),
            split=("status", "status", "Status"),
        ),
        over_time(
            "platform-lens-chunks-per-site-day",
            "Chunks indexed per site per day",
            "Chunks written by the LLM step (chunks-*), by the day they were indexed.",
            "platform-chunks",
            time=date_histogram("indexed_at", "Day", per_day),
            value=("chunks", metric("count", "", "Chunks")),
            split=by_site,
        ),
        lens(
            "platform-lens-price-history",
            "Price history",
            "Each recorded price change's new price (changes-*, field price) over time, per "
            'item; narrow it with the query bar, e.g. item_key : "demo:demo_product:DM-00001".',
            "platform-changes",
            {
                "time": date_histogram("time", "Changed"),
                "price": metric("average", "new_number", "Price"),
                "item": terms("item_key", "Item", 20, {"type": "alphabetical", "fallback": False}),
            },
            "lnsXY",
            xy("line", "time", ["price"], "item"),
            query='field : "price"',
        ),
        over_time(
            "platform-lens-changes-per-kind",
            "Changes per kind per day",
            "Change documents (changes-*) by kind: price drops, back in stock, ...",
            "platform-changes",
            time=date_histogram("time", "Day", per_day),
            value=("changes", metric("count", "", "Changes")),
            split=("kind", "kind", "Kind"),
        ),
    ]


def dashboard(panels_of: list[dict[str, Any]]) -> dict[str, Any]:
    panels = []
    references = []
    width, height = 24, 15
    for number, visualization in enumerate(panels_of):
        panel_index = f"p{number + 1}"
        panels.append(
            {
                "version": CORE_MIGRATION_VERSION,
                "type": "lens",
                "gridData": {
                    "x": (number % 2) * width,
                    "y": (number // 2) * height,
                    "w": width,
                    "h": height,
                    "i": panel_index,
                },
                "panelIndex": panel_index,
                "embeddableConfig": {"enhancements": {}},
                "panelRefName": f"panel_{panel_index}",
            }
        )
        references.append(
            {
                "name": f"{panel_index}:panel_{panel_index}",
                "type": "lens",
                "id": visualization["id"],
            }
        )
    attributes = {
        "title": "Scraping platform",
        "description": "Items per site, new/changed items per job, block rate, job durations "
        "and statuses, chunks indexed, price history and changes per kind (generated by "
        "python -m orchestration.wiring).",
        "panelsJSON": json.dumps(panels, separators=(",", ":")),
        "optionsJSON": json.dumps(
            {
                "useMargins": True,
                "syncColors": False,
                "syncCursor": True,
                "syncTooltips": False,
                "hidePanelTitles": False,
            },
            separators=(",", ":"),
        ),
        "timeRestore": True,
        "timeFrom": "now-30d",
        "timeTo": "now",
        "refreshInterval": {"pause": True, "value": 60000},
        "kibanaSavedObjectMeta": {
            "searchSourceJSON": json.dumps(
                {"query": {"query": "", "language": "kuery"}, "filter": []},
                separators=(",", ":"),
            )
        },
        "version": 1,
    }
    return saved_object("dashboard", "platform-overview", attributes, references)
