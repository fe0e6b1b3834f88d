"""The live view: what a run is doing while it runs.

Verbs publish to the process's :class:`~iowatt.live.board.Board` as they go (which engines run,
power and sensor readings, the stimulus and step); :mod:`iowatt.live.exposition` turns a board
into Prometheus metric families on each scrape, :mod:`iowatt.live.endpoint` serves them over
HTTP (``--serve``) or writes node_exporter's textfile (``--textfile``), and ``iowatt live``
(:mod:`iowatt.live.dashboard`) draws them in the terminal, from an endpoint or from a finished
run in the store (:mod:`iowatt.live.feed`).
"""
