"""Web access logs: reading any format into time-ordered columns, filtering, splitting into the
study's schedule and request list, statistics, synthetic diurnal logs, anonymisation."""
