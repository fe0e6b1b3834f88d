"""The self-contained HTML report of one or more runs, and the page of a comparison.

One file, no network: styles sit in the page and plots are inline SVG, so a report can be
mailed, archived or opened offline. Layouts live in the ``*.html`` templates; the modules only
gather what they show (``write`` the run report, ``compare_page`` a comparison's page).
"""

from iowatt.report.write import write_report

__all__ = ["write_report"]
