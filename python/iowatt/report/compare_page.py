"""A comparison as a self-contained HTML page: its table, legend and each workload's runs in
order, coloured by group."""

from __future__ import annotations

from pathlib import Path

from iowatt import __version__
from iowatt.compare.data import METRICS, Rows
from iowatt.compare.render import legend, table_rows, title
from iowatt.compare.table import Comparison
from iowatt.report.series import SeriesPoint, series_plot
from iowatt.report.write import templates


def compare_page(cmp: Comparison, rows: Rows, layout: str) -> str:
    """The page of ``cmp`` in ``layout`` (``long`` or ``study``)."""
    header, body = table_rows(cmp, layout)
    plots = []
    label = METRICS[cmp.settings.metric][0]
    for w in cmp.workloads:
        idx = [i for i in range(len(rows)) if rows.workload[i] == w]
        points = [
            SeriesPoint(
                str(rows.run_id[i]),
                int(rows.started_ns[i]),
                str(rows.group[i]),
                float(rows.metrics[cmp.settings.metric][i]),
            )
            for i in idx
        ]
        plots.append((w, series_plot(w, points, label)))
    return (
        templates(Path(__file__).parent)
        .get_template("compare.html")
        .render(
            title=title(cmp),
            header=header,
            rows=body,
            label_columns=1 if layout == "study" else 2,
            legend=legend(cmp, layout),
            warnings=cmp.warnings(),
            notes=cmp.notes,
            plots=plots,
            version=__version__,
        )
    )
